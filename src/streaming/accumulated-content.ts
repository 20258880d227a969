import type { ChunkTransport, StreamEvent, StreamOffset } from './chunk';

/**
 * A run's chunks from an offset with spec 7.8's `accumulated_content` on each text chunk: the call's
 * text so far in this attempt, so a consumer rebuilds the reply without keeping state. Derived here, on
 * the side channel, never stored: the call is read from its first chunk and what the follower already
 * has is dropped. (Where a Redis stream was trimmed below a call's start, the text is what is left.)
 */
export async function* withAccumulatedContent(
  transport: ChunkTransport,
  runId: string,
  from: StreamOffset,
  signal: AbortSignal,
): AsyncIterable<StreamEvent> {
  let text = '';
  let segment = '';
  // The offset's chunk index applies to its own call and attempt (the first attempt read, without one).
  let skipping: { llmCall: number; attempt: number | undefined } | null = {
    llmCall: from.llm_call,
    attempt: from.attempt,
  };
  for await (const event of transport.subscribe(runId, { ...from, chunk_index: 0 }, signal)) {
    const key = `${event.llm_call}:${event.attempt}`;
    if (key !== segment) {
      segment = key;
      text = '';
    }
    if (skipping && (event.llm_call !== skipping.llmCall || (skipping.attempt ?? event.attempt) !== event.attempt))
      skipping = null;
    if (skipping) skipping.attempt = event.attempt;
    const index = event.event_type === 'llm_stream_end' ? event.chunks : event.chunk_index;
    if (event.event_type === 'llm_chunk_arrive') {
      text += event.chunk;
      if (skipping && index < from.chunk_index) continue;
      yield { ...event, accumulated_content: text };
      continue;
    }
    if (skipping && index < from.chunk_index) continue;
    yield event;
  }
}
