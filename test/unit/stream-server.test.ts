import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../src/runtime';
import type { StreamEvent } from '../../src/streaming/chunk';
import { readChunks } from '../../src/streaming/chunk-client';
import { ChunkHub } from '../../src/streaming/chunk-hub';
import { startStreamServer, type StreamServer } from '../../src/streaming/stream-server';
import { StreamTokens } from '../../src/streaming/stream-token';

const RUN = 'run-1';
const base = {
  protocol_version: PROTOCOL_VERSION,
  run_id: RUN,
  iteration: 0,
  timestamp: '2026-01-01T00:00:00.000Z',
} as const;
const text = (llm_call: number, attempt: number, chunk_index: number): StreamEvent => ({
  ...base,
  event_type: 'llm_chunk_arrive',
  llm_call,
  attempt,
  chunk_index,
  chunk: `t${llm_call}.${attempt}.${chunk_index}`,
});
const delta = (llm_call: number, attempt: number, chunk_index: number): StreamEvent => ({
  ...base,
  event_type: 'tool_call_arguments_delta',
  llm_call,
  attempt,
  chunk_index,
  tool_name: 'add',
  tool_call_id: 'call_1',
  argname: 'a',
  argcontent_delta: `d${llm_call}.${attempt}.${chunk_index}`,
});
/** As the endpoint serves an event: text chunks carry the text so far (here each attempt has one chunk). */
const served = (event: StreamEvent): StreamEvent =>
  event.event_type === 'llm_chunk_arrive' ? { ...event, accumulated_content: event.chunk } : event;
const end = (llm_call: number, attempt: number, chunks: number, outcome: 'completed' | 'failed'): StreamEvent => ({
  event_type: 'llm_stream_end',
  protocol_version: PROTOCOL_VERSION,
  run_id: RUN,
  llm_call,
  attempt,
  chunks,
  outcome,
});

let hub: ChunkHub;
let tokens: StreamTokens;
let server: StreamServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(maxFollowers?: number): Promise<StreamServer> {
  hub = new ChunkHub();
  tokens = new StreamTokens('unit-test-secret');
  server = await startStreamServer(hub, {
    port: 0,
    host: '127.0.0.1',
    tokens,
    ...(maxFollowers ? { maxFollowers } : {}),
  });
  return server;
}

/** Sends raw bytes and returns the status line of the answer. */
function raw(url: string, request: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.on('data', (data) => (answer += data.toString()));
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
    socket.on('error', reject);
  });
}

/** The first SSE frame after connecting with these headers (the connection is closed after it). */
async function firstFrame(url: string, headers: Record<string, string>): Promise<{ id: string; event: StreamEvent }> {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  let buffer = '';
  for (;;) {
    const { value } = await reader.read();
    buffer += new TextDecoder().decode(value);
    const frame = /id: (\S+)\ndata: (.*)\n\n/.exec(buffer);
    if (frame) {
      abort.abort();
      return { id: frame[1]!, event: JSON.parse(frame[2]!) as StreamEvent };
    }
  }
}

describe('the token-stream endpoint', () => {
  it('answers malformed requests with 4xx and keeps serving', async () => {
    const { url } = await start();
    const auth = { authorization: `Bearer ${tokens.tokenFor(RUN)}` };
    // The request that used to stop the worker: a lone byte of a UTF-8 sequence in the path.
    const invalidPath = await fetch(`${url}/v1/runs/%E0/chunks`, { headers: auth });
    expect(invalidPath.status).toBe(400);
    expect(await invalidPath.json()).toEqual({
      error: { type: 'BadRequest', message: 'the run id is not valid percent-encoded UTF-8' },
    });
    expect((await fetch(`${url}/v1/runs/${'x'.repeat(1001)}/chunks`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${url}/v1/runs/${RUN}/chunks?llm_call=abc`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${url}/v1/runs/${RUN}/chunks?chunk_index=-1`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${url}/v1/runs/${RUN}/chunks?llm_call=99999999999999999999`, { headers: auth })).status).toBe(
      400,
    );
    expect(
      (await fetch(`${url}/v1/runs/${RUN}/chunks`, { headers: { ...auth, 'last-event-id': 'nonsense' } })).status,
    ).toBe(400);
    expect((await fetch(`${url}/v1/other`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}/v1/runs/${RUN}/chunks`, { method: 'POST', headers: auth })).status).toBe(405);
    expect(await raw(url, 'GARBAGE\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
    expect(
      await raw(url, `GET /v1/runs/${RUN}/chunks HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(100_000)}\r\n\r\n`),
    ).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    // Still serving.
    hub.publish(text(1, 1, 0));
    expect((await firstFrame(`${url}/v1/runs/${RUN}/chunks`, auth)).id).toBe('1:1:0');
  });

  it('gives no data without the run’s credential', async () => {
    const { url } = await start();
    hub.publish(text(1, 1, 0));
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${tokens.tokenFor('another-run')}` },
      { authorization: tokens.tokenFor(RUN) },
    ]) {
      const response = await fetch(`${url}/v1/runs/${RUN}/chunks`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.text()).not.toContain('t1.1.0');
    }
    // A token minted by a worker with another secret is worthless here.
    expect(
      (
        await fetch(`${url}/v1/runs/${RUN}/chunks`, {
          headers: { authorization: `Bearer ${new StreamTokens('other').tokenFor(RUN)}` },
        })
      ).status,
    ).toBe(401);
    // A token expires an hour after it was minted.
    const minted = new StreamTokens('unit-test-secret', () => Date.now() - 61 * 60 * 1000).tokenFor(RUN);
    expect(
      (await fetch(`${url}/v1/runs/${RUN}/chunks`, { headers: { authorization: `Bearer ${minted}` } })).status,
    ).toBe(401);
    // EventSource cannot set headers: the token may come as a query parameter.
    expect((await firstFrame(`${url}/v1/runs/${RUN}/chunks?token=${tokens.tokenFor(RUN)}`, {})).event).toEqual(
      served(text(1, 1, 0)),
    );
  });

  it('resumes exactly after every kind of event id (chunk, argument delta, failed attempt, end)', async () => {
    const { url } = await start();
    const auth = { authorization: `Bearer ${tokens.tokenFor(RUN)}` };
    const sequence = [
      text(1, 1, 0),
      delta(1, 1, 1),
      end(1, 1, 2, 'failed'),
      text(1, 2, 0),
      delta(1, 2, 1),
      end(1, 2, 2, 'completed'),
      text(2, 1, 0),
      delta(2, 1, 1),
    ];
    for (const event of sequence) hub.publish(event);
    // The failed attempt was replaced: a follower that starts now reads attempt 2 directly.
    const seen: string[] = [];
    const abort = new AbortController();
    for await (const event of readChunks(
      { url, token: tokens.tokenFor(RUN) },
      RUN,
      { llm_call: 1, chunk_index: 0 },
      abort.signal,
    )) {
      seen.push(JSON.stringify(event));
      if (seen.length === 5) abort.abort();
    }
    expect(seen).toEqual(sequence.slice(3).map((event) => JSON.stringify(served(event))));
    const after: Array<[string, StreamEvent]> = [
      // Ids of the superseded attempt resume in the attempt that replaced it, from its start.
      ['1:1:0', text(1, 2, 0)],
      ['1:1:1', text(1, 2, 0)],
      ['1:1:failed', text(1, 2, 0)],
      ['1:2:0', delta(1, 2, 1)],
      ['1:2:1', end(1, 2, 2, 'completed')],
      ['1:2:end', text(2, 1, 0)],
      ['2:1:0', delta(2, 1, 1)],
      // Two-part ids of earlier versions.
      ['1:end', text(2, 1, 0)],
      ['2:0', delta(2, 1, 1)],
    ];
    for (const [lastEventId, expected] of after) {
      const frame = await firstFrame(`${url}/v1/runs/${RUN}/chunks`, { ...auth, 'last-event-id': lastEventId });
      expect([lastEventId, frame.event]).toEqual([lastEventId, served(expected)]);
    }
  });

  it('gives each text chunk the text so far, from whatever offset a follower starts, per attempt', async () => {
    const { url } = await start();
    const chunk = (attempt: number, index: number, piece: string): StreamEvent => ({
      ...(text(1, attempt, index) as Extract<StreamEvent, { event_type: 'llm_chunk_arrive' }>),
      chunk: piece,
    });
    for (const event of [
      chunk(1, 0, 'Hel'),
      chunk(1, 1, 'lo, '),
      delta(1, 1, 2),
      chunk(1, 3, 'wor'),
      end(1, 1, 4, 'failed'),
      chunk(2, 0, 'Hi'),
      chunk(2, 1, ' there'),
    ])
      hub.publish(event);
    const read = async (from: { llm_call: number; chunk_index: number; attempt?: number }, count: number) => {
      const seen: string[] = [];
      const abort = new AbortController();
      for await (const event of readChunks({ url, token: tokens.tokenFor(RUN) }, RUN, from, abort.signal)) {
        seen.push(
          event.event_type === 'llm_chunk_arrive'
            ? `${event.chunk_index}:${event.accumulated_content}`
            : event.event_type,
        );
        if (seen.length === count) abort.abort();
      }
      return seen;
    };
    // The newest attempt, from its start and from its middle: the text so far includes what was skipped.
    expect(await read({ llm_call: 1, chunk_index: 0 }, 2)).toEqual(['0:Hi', '1:Hi there']);
    expect(await read({ llm_call: 1, chunk_index: 1 }, 1)).toEqual(['1:Hi there']);
  });

  it('limits concurrent followers and frees everything an unknown run id took', async () => {
    const { url } = await start(1);
    const abort = new AbortController();
    const first = await fetch(`${url}/v1/runs/nobody/chunks`, {
      headers: { authorization: `Bearer ${tokens.tokenFor('nobody')}` },
      signal: abort.signal,
    });
    expect(first.status).toBe(200);
    const second = await fetch(`${url}/v1/runs/nobody/chunks`, {
      headers: { authorization: `Bearer ${tokens.tokenFor('nobody')}` },
    });
    expect(second.status).toBe(503);
    expect(hub.size).toEqual({ runs: 0, listeners: 1 });
    abort.abort();
    await expect.poll(() => hub.size).toEqual({ runs: 0, listeners: 0 });
  });
});
