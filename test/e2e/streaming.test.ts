import { describe, expect, inject } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { z } from 'zod';
import { followRun, type FollowOutput } from '../../src/client/follow';
import { callTools, reply } from '../../src/fake-model/steps';
import type { RunEvent } from '../../src/runtime';
import { randomUUID } from 'node:crypto';
import type { ChunkEvent, StreamEvent, StreamOffset } from '../../src/streaming/chunk';
import { findStreamSource, readChunks } from '../../src/streaming/chunk-client';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';
import { eventsQuery } from '../../src/common/definitions';
import type { PatchloopConfig } from '../../src/config/environment';
import type { TestWorld, WorldOptions } from '../support/temporal';
import { eventually } from '../support/wait';

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index} `);

function collector() {
  const events: RunEvent[] = [];
  const chunks: Array<ChunkEvent & { receivedAt: number }> = [];
  const output: FollowOutput = {
    event: (event) => events.push(event),
    chunk: (event: StreamEvent) => {
      if (event.event_type === 'llm_chunk_arrive') chunks.push({ ...event, receivedAt: Date.now() });
    },
  };
  return { events, chunks, output };
}

const noted = defineTool({
  name: 'note',
  description: 'Notes a thing and reports progress.',
  parameters: z.object({ thing: z.string() }),
  execute: ({ thing }, { emit }) => {
    emit('progress', { step: 1, of: 2 });
    emit('progress', { step: 2, of: 2 });
    return `noted ${thing}`;
  },
});

/**
 * The suite runs over both chunk transports: the worker's own endpoint (in-process hub, SSE) and the
 * shared Redis stream (a real redis-server), where the client reads chunks from Redis directly.
 */
describe.each(['in-process', 'redis'] as const)('event stream (%s chunks)', (transport) => {
  const config = (): Partial<PatchloopConfig> =>
    transport === 'redis'
      ? {
          redis: {
            url: inject('redisUrl'),
            maxEntriesPerRun: 10_000,
            ttlSeconds: 600,
            keyPrefix: `patchloop:e2e:${randomUUID()}:`,
          },
        }
      : {};
  const start = (startWorld: StartWorld, options: WorldOptions) =>
    startWorld({ ...options, config: { ...config(), ...options.config } });
  /** A run's chunks from an offset, as a follower of this transport reads them. */
  const chunksOf = async (world: TestWorld, runId: string, from: StreamOffset, signal: AbortSignal) => {
    if (transport === 'redis') return world.client.chunks!.subscribe(runId, from, signal);
    const source = await eventually(() => findStreamSource(world.client.run(runId).workflow), 20_000, 'stream url');
    return readChunks(source, runId, from, signal);
  };

  it('keeps the spec order and framing of events, with custom events before their tool_call_end', async ({
    startWorld,
  }) => {
    const world = await start(startWorld, {
      tools: [addTool, noted],
      agents: [{ name: 'assistant', instructions: 'x', tools: ['add', 'note'] }],
      fake: {
        script: [
          callTools(
            [
              { id: 'a', name: 'add', arguments: '{"a": 1, "b": 2}' },
              { id: 'n', name: 'note', arguments: '{"thing": "x"}' },
            ],
            { usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } },
          ),
          reply(['all ', 'done'], { usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } }),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'go' });
    await run.result();
    const { events } = await run.workflow.query(eventsQuery, {});
    const types = events.map((event) => event.event_type);
    expect(types[0]).toBe('react_start');
    expect(types.at(-1)).toBe('react_end');
    expect(types.filter((type) => type === 'llm_call_start')).toHaveLength(2);
    expect(types.filter((type) => type === 'llm_call_end')).toHaveLength(2);
    expect(types.slice(1, 6)).toEqual([
      'llm_call_start',
      'llm_call_end',
      'tool_calls_batch_start',
      'tool_call_start',
      'tool_call_start',
    ]);
    const noteEnd = events.findIndex((event) => event.event_type === 'tool_call_end' && event.tool_call_id === 'n');
    expect(
      events
        .slice(noteEnd - 2, noteEnd)
        .map((event) => (event.event_type === 'custom_event' ? [event.event_name, event.data] : event.event_type)),
    ).toEqual([
      ['progress', { step: 1, of: 2 }],
      ['progress', { step: 2, of: 2 }],
    ]);
    expect(types.slice(-6)).toEqual([
      'tool_calls_batch_end',
      'react_iteration_end',
      'react_iteration_start',
      'llm_call_start',
      'llm_call_end',
      'react_end',
    ]);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(new Set(events.map((event) => event.run_id))).toEqual(new Set([run.workflowId]));
    // LLM events of iteration k carry k; batch events and the iteration end carry k + 1.
    const byType = (type: string) =>
      events.filter((event) => event.event_type === type).map((event) => event.iteration);
    expect(byType('llm_call_start')).toEqual([0, 1]);
    expect(byType('tool_calls_batch_start')).toEqual([1]);
    expect(byType('react_iteration_end')).toEqual([1]);
    const end = events.at(-1)!;
    expect(end).toMatchObject({
      total_llm_calls: 2,
      total_tool_calls: 2,
      total_token_usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    });
    expect(events.every((event) => !Number.isNaN(Date.parse(event.timestamp)))).toBe(true);
    const page = await run.workflow.query(eventsQuery, { after: 3, limit: 2 });
    expect(page.events.map((event) => event.seq)).toEqual([4, 5]);
    expect(page.next_after).toBe(5);
    // The newest events, as a reader showing the latest asks for them (of those after `after`).
    const newest = await run.status(0, 500, 3);
    expect(newest.events.map((event) => event.seq)).toEqual(events.slice(-3).map((event) => event.seq));
    const tail = await run.workflow.query(eventsQuery, { after: events.length - 2, last: 5 });
    expect(tail.events.map((event) => event.seq)).toEqual([events.length - 1, events.length]);
    world.fake.assertDone();
  });

  it('a follower that joins mid-call gets the whole prefix at once, then live tokens, each exactly once', async ({
    startWorld,
  }) => {
    const world = await start(startWorld, { fake: { script: [reply(words(40), { chunkDelayMs: 60 })] } });
    const run = await world.client.start({ agent: 'assistant', input: 'talk' });
    await world.fake.waitForRequests(1);
    await eventually(() => (world.fake.requests[0]!.chunksWritten >= 15 ? true : undefined));
    const joinedAt = Date.now();
    const output = collector();
    const result = await followRun(run, output.output);
    const received = output.chunks;
    expect(received.map((chunk) => chunk.chunk_index)).toEqual(received.map((_, index) => index));
    expect(received.map((chunk) => chunk.chunk).join('')).toBe(result.answer);
    // Each chunk carries the text so far (spec 7.8), the prefix's too.
    expect(received.map((chunk) => chunk.accumulated_content)).toEqual(
      received.map((_, index) =>
        received
          .slice(0, index + 1)
          .map((chunk) => chunk.chunk)
          .join(''),
      ),
    );
    // The prefix (chunks produced before joining) arrives in one burst; the rest arrives live.
    const prefix = received.filter((chunk) => Date.parse(chunk.timestamp) < joinedAt);
    expect(prefix.length).toBeGreaterThanOrEqual(8);
    expect(prefix.at(-1)!.receivedAt - joinedAt).toBeLessThan(1500);
    const live = received.filter((chunk) => Date.parse(chunk.timestamp) >= joinedAt);
    expect(live.length).toBeGreaterThanOrEqual(5);
    expect(output.events.map((event) => event.event_type)).toContain('react_end');
  });

  it('a reader that disconnects and resumes from its offset gets every chunk exactly once', async ({ startWorld }) => {
    const world = await start(startWorld, { fake: { script: [reply(words(30), { chunkDelayMs: 40 })] } });
    const run = await world.client.start({ agent: 'assistant', input: 'talk' });
    const got: ChunkEvent[] = [];
    const first = new AbortController();
    for await (const event of await chunksOf(world, run.workflowId, { llm_call: 1, chunk_index: 0 }, first.signal)) {
      if (event.event_type !== 'llm_chunk_arrive') break;
      got.push(event);
      if (got.length === 10) first.abort();
    }
    // More chunks are written while this reader is away.
    await eventually(() => (world.fake.requests[0]!.chunksWritten >= got.length + 5 ? true : undefined));
    for await (const event of await chunksOf(
      world,
      run.workflowId,
      { llm_call: 1, chunk_index: got.length },
      new AbortController().signal,
    )) {
      if (event.event_type !== 'llm_chunk_arrive') break;
      got.push(event);
    }
    const result = await run.result();
    expect(got.map((event) => event.chunk_index)).toEqual(Array.from({ length: 30 }, (_, index) => index));
    expect(got.map((event) => event.chunk).join('')).toBe(result.answer);
  });

  it('streams tool-call argument deltas whose pieces add up to each argument', async ({ startWorld }) => {
    const world = await start(startWorld, {
      fake: {
        script: [
          callTools([{ id: 'r1', name: 'repeat', arguments: '{"text": "hello world, streamed", "times": 12}' }]),
          reply('ok'),
        ],
      },
    });
    const id = `args-${Date.now()}`;
    const deltas: Array<{ argname: string; argcontent_delta: string; tool_call_id: string }> = [];
    const abort = new AbortController();
    const reading = (async () => {
      const events =
        transport === 'redis'
          ? world.client.chunks!.subscribe(id, { llm_call: 1, chunk_index: 0 }, abort.signal)
          : readChunks(
              { url: world.worker.streamUrl, token: world.worker.streamToken(id) },
              id,
              { llm_call: 1, chunk_index: 0 },
              abort.signal,
            );
      for await (const event of events) {
        if (event.event_type === 'llm_stream_end') break;
        if (event.event_type === 'tool_call_arguments_delta') deltas.push(event);
      }
    })();
    const run = await world.client.start({ agent: 'assistant', input: 'repeat' }, { workflowId: id });
    await run.result();
    await reading;
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(new Set(deltas.map((delta) => delta.tool_call_id))).toEqual(new Set(['r1']));
    const joined = (name: string) =>
      deltas
        .filter((delta) => delta.argname === name)
        .map((delta) => delta.argcontent_delta)
        .join('');
    expect(joined('text')).toBe('hello world, streamed');
    expect(joined('times')).toBe('12');
    world.fake.assertDone();
  });

  it('writes no chunk to history: a followed run has the same history as an unfollowed one', async ({ startWorld }) => {
    const sizes: Array<{ events: string[]; bytes: number; marker: number }> = [];
    for (const followed of [false, true]) {
      const world = await start(startWorld, {
        fake: { script: [reply(['uniq', 'ue-', 'chunk', '-marker ', ...words(20)], { chunkDelayMs: 30 })] },
      });
      const run = await world.client.start({ agent: 'assistant', input: 'talk' });
      if (followed) {
        // The follower joins once the model call is scheduled (read from history, not by a query): a query
        // that lands while the first workflow task resolves the agent (a local activity) splits that task
        // in two, an empty one more in history that has nothing to do with chunks.
        await eventually(async () =>
          (await run.workflow.fetchHistory()).events!.some((event) => event.activityTaskScheduledEventAttributes)
            ? true
            : undefined,
        );
        await followRun(run, collector().output);
      } else await run.result();
      const history = await run.workflow.fetchHistory();
      const text = JSON.stringify(history);
      sizes.push({
        events: history.events!.map((event) => String(event.eventType)),
        bytes: (await run.historySize()).bytes,
        marker: text.split('unique-chunk-marker').length,
      });
      await world.close();
    }
    expect(sizes[1]!.events).toEqual(sizes[0]!.events);
    // Only timing fields (durations, timestamps) may differ by a few bytes.
    expect(Math.abs(sizes[1]!.bytes - sizes[0]!.bytes)).toBeLessThan(32);
    expect(sizes[1]!.marker).toBe(sizes[0]!.marker);
  });
});
