import { PROTOCOL_VERSION } from '../../src/runtime';
import type { ChunkEvent, StreamEvent } from '../../src/streaming/chunk';

/** Chunk `chunk_index` of attempt `attempt` of LLM call `llm_call`; its text names all three. */
export const chunkEvent = (llm_call: number, attempt: number, chunk_index: number, runId = 'r'): ChunkEvent => ({
  event_type: 'llm_chunk_arrive',
  protocol_version: PROTOCOL_VERSION,
  run_id: runId,
  iteration: 0,
  llm_call,
  attempt,
  chunk_index,
  chunk: `c${llm_call}.${attempt}.${chunk_index} `,
  timestamp: '2026-01-01T00:00:00.000Z',
});

/** The end marker of an attempt after `chunks` chunks. */
export const endEvent = (
  llm_call: number,
  attempt: number,
  chunks: number,
  outcome: 'completed' | 'failed' = 'completed',
  runId = 'r',
): StreamEvent => ({
  event_type: 'llm_stream_end',
  protocol_version: PROTOCOL_VERSION,
  run_id: runId,
  llm_call,
  attempt,
  chunks,
  outcome,
});

/** `c1.1.0` for a chunk, `end1.1` / `failed1.1` for an attempt's end: sequences read at a glance. */
export const eventLabel = (event: StreamEvent): string =>
  event.event_type === 'llm_chunk_arrive'
    ? event.chunk.trim()
    : event.event_type === 'llm_stream_end'
      ? `${event.outcome === 'failed' ? 'failed' : 'end'}${event.llm_call}.${event.attempt}`
      : 'delta';
