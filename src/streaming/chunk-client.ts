import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { StreamEvent, StreamOffset } from './chunk';

/** Reads a run's token chunks from a worker's SSE endpoint, from an offset, until aborted. */
export async function* readChunks(streamUrl: string, runId: string, from: StreamOffset, signal: AbortSignal): AsyncIterable<StreamEvent> {
  const url = `${streamUrl}/v1/runs/${encodeURIComponent(runId)}/chunks?llm_call=${from.llm_call}&chunk_index=${from.chunk_index}`;
  const response = await fetch(url, { signal, headers: { accept: 'text/event-stream' } });
  if (!response.ok || !response.body) throw new Error(`stream endpoint answered ${response.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(part, { stream: true });
      let boundary: number;
      while ((boundary = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const data = frame
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n');
        if (data !== '') yield JSON.parse(data) as StreamEvent;
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/**
 * Where the run's current LLM call streams from: the LLM activity announces it in its heartbeat
 * details, which `describe()` shows for pending activities (heartbeats are not written to history).
 */
export async function findStreamUrl(handle: WorkflowHandle): Promise<{ url: string; llm_call: number; attempt: number } | undefined> {
  const description = await handle.describe();
  for (const activity of description.raw.pendingActivities ?? []) {
    for (const payload of activity.heartbeatDetails?.payloads ?? []) {
      const details = defaultPayloadConverter.fromPayload(payload) as { stream_url?: unknown; llm_call?: unknown; attempt?: unknown } | undefined;
      if (typeof details?.stream_url === 'string' && typeof details.llm_call === 'number') {
        return { url: details.stream_url, llm_call: details.llm_call, attempt: Number(details.attempt ?? 1) };
      }
    }
  }
  return undefined;
}
