import type { Payload } from '@temporalio/common';
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
 * The latest heartbeat details of a workflow's pending activities (heartbeats are not history),
 * decoded with the client's own codecs (encrypted payloads among them).
 */
export async function pendingHeartbeatDetails(handle: WorkflowHandle): Promise<Array<Record<string, unknown>>> {
  const description = await handle.describe();
  const { payloadConverter, payloadCodecs } = handle.client.options.loadedDataConverter;
  const details: Array<Record<string, unknown>> = [];
  for (const activity of description.raw.pendingActivities ?? []) {
    let payloads = (activity.heartbeatDetails?.payloads ?? []) as Payload[];
    // Codecs decode in the reverse order they encoded.
    for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    for (const payload of payloads)
      details.push((payloadConverter.fromPayload(payload) ?? {}) as Record<string, unknown>);
  }
  return details;
}

/**
 * Where the run's current LLM call streams from: the LLM activity announces it in its heartbeat
 * details, which `describe()` shows for pending activities.
 */
export async function findStreamSource(handle: WorkflowHandle): Promise<StreamSource | undefined> {
  for (const details of await pendingHeartbeatDetails(handle)) {
    const { stream_url: url, stream_token: token, llm_call: llmCall, attempt } = details;
    if (typeof url === 'string' && typeof token === 'string' && typeof llmCall === 'number') {
      return { url, token, llm_call: llmCall, attempt: Number(attempt ?? 1) };
    }
  }
  return undefined;
}
