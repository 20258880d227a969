import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { StreamEvent, StreamOffset } from './chunk';

/** Where a run's current LLM call streams from, as its LLM activity announces it. */
export interface StreamSource {
  url: string;
  /** The run's capability for the stream endpoint. */
  token: string;
  llm_call: number;
  attempt: number;
}

/** Reads a run's token chunks from a worker's SSE endpoint, from an offset, until aborted. */
export async function* readChunks(
  source: Pick<StreamSource, 'url' | 'token'>,
  runId: string,
  from: StreamOffset,
  signal: AbortSignal,
): AsyncIterable<StreamEvent> {
  const query = new URLSearchParams({
    llm_call: String(from.llm_call),
    chunk_index: String(from.chunk_index),
    ...(from.attempt !== undefined ? { attempt: String(from.attempt) } : {}),
  });
  const response = await fetch(`${source.url}/v1/runs/${encodeURIComponent(runId)}/chunks?${query}`, {
    signal,
    headers: { accept: 'text/event-stream', authorization: `Bearer ${source.token}` },
  });
  if (!response.ok || !response.body) throw new Error(`stream endpoint answered ${response.status}`);
  const messages: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => messages.push(message) });
  const decoder = new TextDecoder();
  try {
    for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(part, { stream: true }));
      for (const message of messages.splice(0)) yield JSON.parse(message.data) as StreamEvent;
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/**
 * Where the run's current LLM call streams from: the LLM activity announces it in its heartbeat
 * details, which `describe()` shows for pending activities (heartbeats are not written to history).
 */
export async function findStreamSource(handle: WorkflowHandle): Promise<StreamSource | undefined> {
  const description = await handle.describe();
  for (const activity of description.raw.pendingActivities ?? []) {
    for (const payload of activity.heartbeatDetails?.payloads ?? []) {
      const details = defaultPayloadConverter.fromPayload(payload) as
        { stream_url?: unknown; stream_token?: unknown; llm_call?: unknown; attempt?: unknown } | undefined;
      if (
        typeof details?.stream_url === 'string' &&
        typeof details.stream_token === 'string' &&
        typeof details.llm_call === 'number'
      ) {
        return {
          url: details.stream_url,
          token: details.stream_token,
          llm_call: details.llm_call,
          attempt: Number(details.attempt ?? 1),
        };
      }
    }
  }
  return undefined;
}
