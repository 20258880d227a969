/**
 * The side channel's messages are part of the event protocol (docs/event-protocol.md): their schemas
 * live beside the run's events in `runtime/events.ts`.
 */
export type { ChunkEvent, ChunkStreamEnd, StreamEvent } from '../runtime';
import type { StreamEvent } from '../runtime';

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
