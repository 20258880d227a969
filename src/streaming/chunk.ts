/** One token chunk on the side channel (never in Temporal history). `chunk_index` is its position in the call's stream. */
export interface ChunkEvent {
  event_type: 'llm_chunk_arrive';
  run_id: string;
  iteration: number;
  /** The run's LLM call number (the `llm_call` of `llm_call_start` / `llm_call_end`). */
  llm_call: number;
  /** A retried attempt streams again from the start; followers drop the earlier attempt's chunks. */
  attempt: number;
  chunk_index: number;
  chunk: string;
  /** The call's text so far in this attempt, this chunk included (spec 7.8); added by readers, not stored. */
  accumulated_content?: string;
  timestamp: string;
}

/**
 * Spec 7.4: an argument of a streamed tool call grew. `chunk_index` is the event's position in the
 * call's stream (text chunks and argument deltas share one sequence), so offsets stay gapless.
 */
export interface ArgumentsDeltaEvent {
  event_type: 'tool_call_arguments_delta';
  run_id: string;
  iteration: number;
  llm_call: number;
  attempt: number;
  chunk_index: number;
  tool_name: string;
  tool_call_id: string;
  argname: string;
  argcontent_delta: string;
  timestamp: string;
}

/**
 * Marks the end of one attempt's stream. `completed` and `aborted` end the call; `failed` means the
 * attempt broke and its chunks never reach the transcript: with `retrying`, a later attempt streams the
 * call again (unless the retry budget has run out: the run's events say so); without, the call is over.
 */
export interface ChunkStreamEnd {
  event_type: 'llm_stream_end';
  run_id: string;
  llm_call: number;
  attempt: number;
  chunks: number;
  outcome: 'completed' | 'aborted' | 'failed';
  /** The failure type of a failed attempt (e.g. `ProviderStreamIncomplete`). */
  error?: string;
  /** A failed attempt: whether the failure is retryable, so another attempt follows. */
  retrying?: boolean;
}

export type StreamEvent = ChunkEvent | ArgumentsDeltaEvent | ChunkStreamEnd;

/**
 * Where a follower resumes: the next chunk it has not seen. With `attempt`, the offset belongs to that
 * attempt: an older attempt is not read (the follower waits for this one), and a newer attempt that
 * has replaced it is read from its start.
 */
export interface StreamOffset {
  llm_call: number;
  chunk_index: number;
  attempt?: number;
}

/**
 * Carries chunks from the LLM activity to followers. The embedded default is in-process (`ChunkHub`)
 * and served over SSE by the worker; a shared transport (for example Redis Streams, whose entry ids make
 * offsets) implements the same two methods.
 */
export interface ChunkTransport {
  publish(event: StreamEvent): void;
  subscribe(runId: string, from: StreamOffset, signal: AbortSignal): AsyncIterable<StreamEvent>;
}
