import type { RunEvent, StreamEvent, TokenUsage } from '../../runtime';
import { addedText, MOST_MESSAGE_CHARS, positionOf, textPosition, unseenPart } from '../stream-positions';
import type {
  ResponsesMessageItem,
  ResponsesObject,
  ResponsesOutputText,
  ResponsesStatus,
  ResponsesStreamEvent,
} from './wire';

/**
 * Sequence numbers are the stream's positions (`../stream-positions.ts`): a model call that starts at
 * event s numbers its item's opening events s + 1 and + 2 and its text deltas by their text; the call's
 * end event e numbers the closing events e + 1..3; the response's last event is (last seq + 1), all in
 * blocks. A stream resumed `starting_after` N sends exactly what comes after N.
 */
/** What a response says of itself besides its output, status and usage. */
export interface ResponseHead {
  id: string;
  created_at: number;
  model: string;
  background: boolean;
  previous_response_id: string | null;
  metadata: Record<string, string>;
}

/** How a run ended (or stands), as its response reports it. */
export interface ResponseEnd {
  status: ResponsesStatus;
  usage: TokenUsage | null;
  error: { code: string; message: string } | null;
  /** The run's whole answer, when it has one (the events keep the first 16 KB of a reply). */
  answer: string | null;
}

function responseObject(
  head: ResponseHead,
  state: Pick<ResponseEnd, 'status' | 'usage' | 'error'>,
  output: ResponsesMessageItem[],
): ResponsesObject {
  const usage = state.usage;
  return {
    ...head,
    object: 'response',
    status: state.status,
    error: state.error,
    incomplete_details: state.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    max_output_tokens: null,
    output,
    parallel_tool_calls: true,
    temperature: null,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    truncation: 'disabled',
    usage: usage && {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: usage.cached_prompt_tokens ?? 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.total_tokens,
    },
    user: null,
  };
}

/** The terminal streaming event of each final status. */
const TERMINAL_EVENT: Record<ResponsesStatus, string> = {
  completed: 'response.completed',
  failed: 'response.failed',
  cancelled: 'response.incomplete',
  incomplete: 'response.incomplete',
  queued: 'response.in_progress',
  in_progress: 'response.in_progress',
};

interface OpenCall {
  llmCall: number;
  startSeq: number;
  /** The text its item holds (what was sent as deltas). */
  text: string;
  item: { index: number; id: string } | undefined;
  /** The attempt being read and its text so far (a retried attempt streams again from its start). */
  attempt: number;
  attemptText: string;
}

/**
 * A run's events and tokens as the Responses API tells them: its output items (one assistant message
 * per model call that answered text) and, for a stream, its events with sequence numbers (their positions),
 * sending only those after `startingAfter`.
 */
export class ResponseTimeline {
  readonly output: ResponsesMessageItem[] = [];
  private call: OpenCall | undefined;
  private lastSeq = 0;

  constructor(
    private readonly head: ResponseHead,
    private readonly send: (event: ResponsesStreamEvent) => void = () => undefined,
    private readonly startingAfter = -1,
  ) {}

  private emit(sequence: number, type: string, fields: Record<string, unknown>): void {
    if (sequence > this.startingAfter) this.send({ type, sequence_number: sequence, ...fields });
  }

  /** `response.created` and `response.in_progress`. */
  begin(): void {
    const response = responseObject(this.head, { status: 'in_progress', usage: null, error: null }, []);
    this.emit(0, 'response.created', { response });
    this.emit(1, 'response.in_progress', { response });
  }

  event(event: RunEvent): void {
    this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (event.event_type === 'llm_call_start')
      this.call = {
        llmCall: event.llm_call,
        startSeq: event.seq,
        text: '',
        item: undefined,
        attempt: -1,
        attemptText: '',
      };
    if (event.event_type !== 'llm_call_end' || this.call?.llmCall !== event.llm_call) return;
    const call = this.call;
    this.call = undefined;
    if (event.content.startsWith(call.text)) this.append(call, event.content.slice(call.text.length));
    if (call.item) this.close(call, event.seq, event.outcome === 'aborted' ? 'incomplete' : 'completed');
  }

  /** A token of the call under way (the live stream, when the run streams). */
  chunk(chunk: StreamEvent): void {
    const call = this.call;
    if (chunk.event_type !== 'llm_chunk_arrive' || call?.llmCall !== chunk.llm_call) return;
    const added = addedText(call, chunk);
    if (added !== '') this.append(call, added);
  }

  /** The terminal event, with the whole response (its answer in full when the events cut it). */
  finish(end: ResponseEnd): ResponsesObject {
    const last = this.output.at(-1);
    const part = last?.content[0];
    if (end.answer && part && end.answer.length > part.text.length && end.answer.startsWith(part.text))
      part.text = end.answer;
    const response = responseObject(this.head, end, this.output);
    this.emit(positionOf(this.lastSeq + 1, 0), TERMINAL_EVENT[end.status], { response });
    return response;
  }

  private append(call: OpenCall, delta: string): void {
    const room = MOST_MESSAGE_CHARS - call.text.length;
    const text = delta.slice(0, Math.max(0, room));
    if (text.length === 0) return;
    if (!call.item) {
      const item: ResponsesMessageItem = {
        id: `msg_${this.head.id}_${call.llmCall}`,
        type: 'message',
        status: 'in_progress',
        role: 'assistant',
        content: [],
      };
      call.item = { index: this.output.length, id: item.id };
      this.emit(positionOf(call.startSeq, 1), 'response.output_item.added', {
        output_index: call.item.index,
        item: { ...item },
      });
      const part: ResponsesOutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      this.emit(positionOf(call.startSeq, 2), 'response.content_part.added', { ...this.where(call), part });
      this.output.push({ ...item, content: [{ ...part }] });
    }
    const before = call.text.length;
    call.text += text;
    this.output[call.item.index]!.content[0]!.text = call.text;
    // A reader that resumes inside this delta has seen its first characters already.
    const unseen = unseenPart(this.startingAfter, call.startSeq, before, text);
    if (unseen !== '')
      this.send({
        type: 'response.output_text.delta',
        sequence_number: textPosition(call.startSeq, call.text.length),
        ...this.where(call),
        delta: unseen,
        logprobs: [],
      });
  }

  private where(call: OpenCall) {
    return { item_id: call.item!.id, output_index: call.item!.index, content_index: 0 };
  }

  private close(call: OpenCall, endSeq: number, status: 'completed' | 'incomplete'): void {
    const item = this.output[call.item!.index]!;
    item.status = status;
    const part = item.content[0]!;
    this.emit(positionOf(endSeq, 1), 'response.output_text.done', {
      ...this.where(call),
      text: part.text,
      logprobs: [],
    });
    this.emit(positionOf(endSeq, 2), 'response.content_part.done', { ...this.where(call), part: { ...part } });
    this.emit(positionOf(endSeq, 3), 'response.output_item.done', {
      output_index: call.item!.index,
      item: { ...item, content: [{ ...part }] },
    });
  }
}
