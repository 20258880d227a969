import OpenAI from 'openai';
import type { JsonObject, JsonValue, ToolCall } from '../context';
import { responsesUsage } from '../runtime';
import { incompleteReply } from './provider-errors';
import type { Reply } from './reply';
import type { StreamAccumulator } from './stream-accumulator';

/** The fields of a Responses API stream event this reader uses (`type` names the event). */
export interface ResponsesEvent {
  type: string;
  delta?: string;
  output_index?: number;
  item?: OutputItem;
  response?: ResponseObject;
  code?: string | null;
  message?: string;
  param?: string | null;
}

/** An item of a response's `output`: a message, a function call, a reasoning item, or another kind. */
interface OutputItem {
  type: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  content?: Array<{ type: string; text?: string; refusal?: string }>;
  [key: string]: unknown;
}

type ResponsesUsage = Parameters<typeof responsesUsage>[0];

/** The fields of a response object (non-streamed, or inside a stream's last event) this reader uses. */
export interface ResponseObject {
  status?: string;
  output?: OutputItem[];
  usage?: ResponsesUsage | null;
  incomplete_details?: { reason?: string | null } | null;
  error?: { code?: string | null; message?: string } | null;
}

/**
 * Reads a Responses API stream into the same accumulator the chat stream fills: text and refusal
 * deltas are text chunks (followers see them), function calls are tool-call fragments by output index
 * (their argument deltas reported as they grow), reasoning items go whole into the reasoning details.
 * The stream counts as complete once `response.completed` or `response.incomplete` arrived; an `error`
 * event and `response.failed` throw the provider's error, classified like an error inside a chat stream.
 */
export class ResponsesStreamReader {
  /** Set by the stream's last event: the reply is complete. */
  ended = false;
  private calls = 0;
  /** Per output index: argument text and message text received so far. */
  private readonly argumentsSeen = new Map<number, string>();
  private readonly textSeen = new Set<number>();

  constructor(private readonly stream: StreamAccumulator) {}

  add(event: ResponsesEvent): void {
    const index = event.output_index ?? 0;
    switch (event.type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        this.textSeen.add(index);
        this.text(event.type === 'response.refusal.delta' ? { refusal: event.delta } : { content: event.delta });
        return;
      case 'response.function_call_arguments.delta':
        this.callArguments(index, event.delta ?? '');
        return;
      case 'response.output_item.added':
        if (event.item?.type === 'function_call') this.callOpened(index, event.item);
        return;
      case 'response.output_item.done':
        if (event.item) this.itemDone(index, event.item);
        return;
      case 'response.completed':
      case 'response.incomplete':
        this.finish(event.response ?? {});
        return;
      case 'response.failed':
        throw providerError(event.response?.error ?? { message: 'the response failed' });
      case 'error':
        throw providerError({ code: event.code ?? null, message: event.message ?? 'error event' });
      default:
        return;
    }
  }

  private text(delta: { content?: string; refusal?: string }): void {
    this.stream.add({ choices: [{ delta }] });
  }

  private callOpened(index: number, item: OutputItem): void {
    this.calls += 1;
    const text = item.arguments ?? '';
    this.argumentsSeen.set(index, text);
    const fragment = {
      index,
      id: item.call_id ?? '',
      type: 'function',
      function: { name: item.name ?? '', arguments: text },
    };
    this.stream.add({ choices: [{ delta: { tool_calls: [fragment] } }] });
  }

  private callArguments(index: number, text: string): void {
    if (text === '') return;
    this.argumentsSeen.set(index, (this.argumentsSeen.get(index) ?? '') + text);
    this.stream.add({ choices: [{ delta: { tool_calls: [{ index, function: { arguments: text } }] } }] });
  }

  /** A finished item: reasoning is kept whole; what a server sent only here (no deltas) is added. */
  private itemDone(index: number, item: OutputItem): void {
    if (item.type === 'reasoning') {
      this.stream.add({ choices: [{ delta: { reasoning_details: [item as unknown as JsonObject] } }] });
    } else if (item.type === 'function_call') {
      const seen = this.argumentsSeen.get(index);
      if (seen === undefined) return this.callOpened(index, item);
      const whole = item.arguments ?? '';
      if (whole.length > seen.length && whole.startsWith(seen)) this.callArguments(index, whole.slice(seen.length));
    } else if (item.type === 'message' && !this.textSeen.has(index)) {
      this.textSeen.add(index);
      for (const part of item.content ?? []) this.text({ content: part.text, refusal: part.refusal });
    }
  }

  private finish(response: ResponseObject): void {
    this.ended = true;
    if (response.usage) this.stream.usage = responsesUsage(response.usage);
    this.stream.finishReason = finishReason(response, this.calls > 0);
  }
}

/** A non-streamed response: its output items read in order, complete only when its status says so. */
export function responseReply(response: ResponseObject | undefined): Reply {
  const status = response?.status;
  if (status === 'failed') throw providerError(response?.error ?? { message: 'the response failed' });
  if (status !== 'completed' && status !== 'incomplete')
    throw incompleteReply(`the response's status is ${JSON.stringify(status ?? null)}`);
  let content = '';
  const toolCalls: ToolCall[] = [];
  const reasoningDetails: JsonValue[] = [];
  for (const item of response?.output ?? []) {
    if (item.type === 'message')
      for (const part of item.content ?? [])
        content += part.type === 'refusal' ? (part.refusal ?? '') : (part.text ?? '');
    else if (item.type === 'function_call' && item.call_id && item.name)
      toolCalls.push({
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments ?? '' },
      });
    else if (item.type === 'reasoning') reasoningDetails.push(item as unknown as JsonObject);
  }
  return {
    content,
    toolCalls,
    reasoningDetails,
    usage: response?.usage ? responsesUsage(response.usage) : null,
    finishReason: finishReason(response!, toolCalls.length > 0),
    streamed: false,
  };
}

/** The chat finish reason a response's end corresponds to. */
function finishReason(response: ResponseObject, calls: boolean): string {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : (reason ?? 'incomplete');
  }
  return calls ? 'tool_calls' : 'stop';
}

/**
 * The provider's error from inside a stream or a failed response, as the openai client makes one for
 * an error in a chat stream (no HTTP status): `classifyProviderError` reads its code and type. Codes
 * that say the request itself is wrong (an invalid prompt or image, a policy) are typed as such.
 */
function providerError(error: { code?: string | null; message?: string }): InstanceType<typeof OpenAI.APIError> {
  const code = error.code ?? null;
  const rejected = code !== null && /^invalid_|image|_policy/.test(code);
  const body = { code, message: error.message ?? '', ...(rejected ? { type: 'invalid_request_error' } : {}) };
  return new OpenAI.APIError(undefined, body, error.message, undefined);
}
