import type { ServerResponse } from 'node:http';
import { BodyWriter, faultingEventSender, pause, sendJson, startStream } from './http';
import type { FakeReply } from './steps';

/**
 * The fake model's answers on the Responses API (`POST /v1/responses`), from the same scripted steps
 * as its chat completions: reasoning items (`FakeReply.reasoning`), then the text as one message item,
 * then one `function_call` item per tool call, and `response.completed` with the usage. Streamed as
 * OpenAI's semantic events (`event:` and `data:` lines, no `[DONE]`), or as one response object.
 */

/** What the streaming writer needs of the request's record. */
export interface StreamRecord {
  chunksWritten: number;
  firstChunkAt?: number;
  lastChunkAt?: number;
}

interface OutputEvent {
  type: string;
  data: Record<string, unknown>;
  delayMs: number;
  content?: true;
}

/** A text delta of the reply's message item (the fake's `drop` and `hang` steps stream these). */
export function textDelta(text: string, sequence: number): { type: string; data: Record<string, unknown> } {
  const type = 'response.output_text.delta';
  const data = { type, item_id: 'msg_fake', output_index: 0, content_index: 0, delta: text, logprobs: [] };
  return { type, data: { ...data, sequence_number: sequence } };
}

export function writeResponsesEvent(response: ServerResponse, event: { type: string; data: unknown }): string {
  const text = `event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
  response.write(text);
  return text;
}

export async function streamResponse(
  step: FakeReply,
  request: { model: string; promptTokens: number },
  response: ServerResponse,
  closed: () => boolean,
  record: StreamRecord,
): Promise<void> {
  const { model, promptTokens } = request;
  startStream(response);
  const { send: sendEvent } = faultingEventSender(
    response,
    step.fault,
    closed,
    '{"type": "response.output_text.delta", this is not JSON',
    () => {
      record.chunksWritten += 1;
    },
  );
  const send = (event: OutputEvent, sequence: number): boolean =>
    sendEvent(`event: ${event.type}\ndata: ${JSON.stringify({ ...event.data, sequence_number: sequence })}\n\n`);
  const events = streamedEvents(step, model, promptTokens);
  for (const [sequence, event] of events.entries()) {
    await pause(event.delayMs);
    if (!send(event, sequence)) return;
    if (event.content) {
      record.firstChunkAt ??= performance.timeOrigin + performance.now();
      record.lastChunkAt = performance.timeOrigin + performance.now();
    }
  }
  if (!closed()) response.end();
}

export function plainResponse(step: FakeReply, model: string, promptTokens: number, response: ServerResponse): void {
  const data = responseObject(step, model, promptTokens, 'completed', outputItems(step));
  const fault = step.fault;
  if ((fault?.kind === 'eof' && fault.omit !== 'done') || fault?.kind === 'no_choices') data['status'] = 'in_progress';
  if (fault?.kind !== 'reset') {
    sendJson(response, 200, data);
    return;
  }
  const text = JSON.stringify(data);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  new BodyWriter(response, fault.afterBytes ?? Math.floor(text.length / 2)).write(text);
}

/** The reply's output items, whole, in order. */
function outputItems(step: FakeReply): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = (step.reasoning ?? []).map((reasoning) => ({
    id: reasoning.id,
    type: 'reasoning',
    summary: (reasoning.summary ?? []).map((text) => ({ type: 'summary_text', text })),
    ...(reasoning.encrypted_content !== undefined ? { encrypted_content: reasoning.encrypted_content } : {}),
  }));
  const text = contentText(step);
  if (text !== '') items.push(messageItem(text, 'completed'));
  for (const [index, call] of (step.toolCalls ?? []).entries())
    items.push({
      id: `fc_fake_${index}`,
      type: 'function_call',
      status: 'completed',
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
    });
  return items;
}

/**
 * The events of a streamed reply, each with the pause before it: every output item opens
 * (`response.output_item.added`), grows (text deltas as scripted, call arguments in two halves) and
 * closes (`response.output_item.done`); then `response.completed`, unless a fault leaves it out.
 */
function streamedEvents(step: FakeReply, model: string, promptTokens: number): OutputEvent[] {
  const first = step.firstChunkDelayMs ?? step.chunkDelayMs ?? 0;
  let paused = false;
  const delay = () => {
    const ms = paused ? (step.chunkDelayMs ?? 0) : first;
    paused = true;
    return ms;
  };
  const events: OutputEvent[] = [];
  const push = (type: string, data: Record<string, unknown>, delayMs = 0, content?: true) =>
    events.push({ type, data: { type, ...data }, delayMs, ...(content ? { content } : {}) });
  push('response.created', { response: responseObject(step, model, promptTokens, 'in_progress', []) });
  const items = outputItems(step);
  for (const [index, item] of items.entries()) {
    const at = { output_index: index };
    if (item['type'] === 'reasoning') {
      push('response.output_item.added', { ...at, item: { ...item, summary: [] } }, delay());
    } else if (item['type'] === 'message') {
      push('response.output_item.added', { ...at, item: messageItem('', 'in_progress') });
      const part = { item_id: item['id'], ...at, content_index: 0 };
      push('response.content_part.added', { ...part, part: { type: 'output_text', text: '', annotations: [] } });
      const chunks = typeof step.content === 'string' ? [step.content] : (step.content ?? []);
      for (const text of chunks)
        push('response.output_text.delta', { ...part, delta: text, logprobs: [] }, delay(), true);
      push('response.output_text.done', { ...part, text: contentText(step), logprobs: [] });
      push('response.content_part.done', {
        ...part,
        part: { type: 'output_text', text: contentText(step), annotations: [] },
      });
    } else {
      const whole = String(item['arguments']);
      const half = Math.ceil(whole.length / 2);
      push('response.output_item.added', { ...at, item: { ...item, arguments: '', status: 'in_progress' } }, delay());
      const call = { item_id: item['id'], ...at };
      push('response.function_call_arguments.delta', { ...call, delta: whole.slice(0, half) });
      push('response.function_call_arguments.delta', { ...call, delta: whole.slice(half) });
      push('response.function_call_arguments.done', { ...call, name: item['name'], arguments: whole });
    }
    push('response.output_item.done', { ...at, item });
  }
  const omit = step.fault?.kind === 'eof' ? step.fault.omit : undefined;
  if (omit !== 'finish_reason' && omit !== 'both')
    push('response.completed', { response: responseObject(step, model, promptTokens, 'completed', items) });
  return events;
}

function responseObject(
  step: FakeReply,
  model: string,
  promptTokens: number,
  status: string,
  output: Array<Record<string, unknown>>,
): Record<string, unknown> {
  const done = status === 'completed';
  return {
    id: 'resp_fake',
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output,
    error: null,
    incomplete_details: null,
    usage: done ? usage(step, promptTokens) : null,
  };
}

/** The scripted usage in the Responses API's names, or the fake's own count (as its chat replies). */
function usage(step: FakeReply, promptTokens: number) {
  if (step.usage === null) return null;
  const text = contentText(step) + (step.toolCalls ?? []).map((call) => call.name + call.arguments).join('');
  const scripted = step.usage ?? {
    prompt_tokens: promptTokens,
    completion_tokens: Math.ceil(text.length / 4) + 1,
    total_tokens: promptTokens + Math.ceil(text.length / 4) + 1,
  };
  return {
    input_tokens: scripted.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: scripted.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: scripted.total_tokens,
  };
}

function messageItem(text: string, status: string): Record<string, unknown> {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    status,
    content: text === '' ? [] : [{ type: 'output_text', text, annotations: [] }],
  };
}

function contentText(step: FakeReply): string {
  return typeof step.content === 'string' ? step.content : (step.content ?? []).join('');
}
