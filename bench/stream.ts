/**
 * `npm run bench:stream`: token streaming through the side channel, over both transports (the worker's
 * in-process hub served over SSE, and Redis Streams on a local redis-server), measured side by side with
 * the fake model's own stream: first-token latency, sustained chunks per second, and history bytes of
 * the same run with a follower, without one, and without streaming at all.
 */
import { followRun, type FollowOutput } from '../src/client/follow';
import type { Responder } from '../src/fake-model/server';
import type { StreamEvent } from '../src/streaming/chunk';
import { readChunks } from '../src/streaming/chunk-client';
import { percentile, table } from './report';
import { startRedis } from '../support/redis';
import { startBenchWorld } from './world';

const RUNS = 20;
const BURST = 2000;

const responder: Responder = (body) => {
  const prompt = String(body.messages.at(-1)?.['content'] ?? '');
  if (prompt.startsWith('burst'))
    return { kind: 'reply', content: Array.from({ length: BURST }, (_, index) => `t${index} `) };
  return {
    kind: 'reply',
    content: Array.from({ length: 20 }, (_, index) => `w${index} `),
    firstChunkDelayMs: 50,
    chunkDelayMs: 10,
  };
};

const now = () => performance.timeOrigin + performance.now();

type Transport = 'in-process' | 'redis';

interface Figures {
  direct: number[];
  followed: number[];
  rate: { channel: number; model: number };
  history: string[][];
}

/** The same measurements on one chunk transport: the worker's in-process hub (SSE) or Redis Streams. */
async function measure(transport: Transport, redisUrl: string): Promise<Figures> {
  const world = await startBenchWorld(responder, {
    agents: [
      { name: 'assistant', instructions: 'x', tools: [] },
      { name: 'plain', instructions: 'x', tools: [], stream: false },
    ],
    ...(transport === 'redis'
      ? {
          config: {
            redis: { url: redisUrl, maxEntriesPerRun: 10_000, ttlSeconds: 600, keyPrefix: `bench:${Date.now()}:` },
          },
        }
      : {}),
  });
  const url = world.worker.streamUrl;
  // A reader subscribed before the run starts: SSE from the worker, or Redis directly.
  const subscribe = (id: string, signal: AbortSignal): AsyncIterable<StreamEvent> =>
    transport === 'redis'
      ? world.client.chunks!.subscribe(id, { llm_call: 1, chunk_index: 0 }, signal)
      : readChunks({ url, token: world.worker.streamToken(id) }, id, { llm_call: 1, chunk_index: 0 }, signal);
  const figures: Figures = { direct: [], followed: [], rate: { channel: 0, model: 0 }, history: [] };
  try {
    // First token: a reader subscribed to the side channel before the run starts, and `follow`, which
    // discovers the stream (through the LLM activity's heartbeat, or Redis).
    for (let index = 0; index < RUNS; index += 1) {
      const id = `stream-${transport}-${index}-${Date.now()}`;
      const abort = new AbortController();
      const first = firstChunk(subscribe(id, abort.signal));
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'talk' }, { workflowId: id });
      const receivedAt = await first;
      abort.abort();
      await run.result();
      figures.direct.push(receivedAt - world.fake.requests[before]!.firstChunkAt!);
    }
    for (let index = 0; index < RUNS; index += 1) {
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'talk' });
      let receivedAt = 0;
      const output: FollowOutput = { event: () => undefined, chunk: () => (receivedAt ||= now()) };
      await followRun(run, output, { intervalMs: 50 });
      figures.followed.push(receivedAt - world.fake.requests[before]!.firstChunkAt!);
    }
    // Sustained rate: a burst of chunks with no pause between them.
    {
      const id = `burst-${transport}-${Date.now()}`;
      const abort = new AbortController();
      const times: number[] = [];
      const reading = (async () => {
        for await (const event of subscribe(id, abort.signal)) {
          if (event.event_type === 'llm_stream_end') break;
          times.push(now());
        }
      })();
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'burst' }, { workflowId: id });
      await run.result();
      await reading;
      const request = world.fake.requests[before]!;
      figures.rate = {
        channel: (times.length - 1) / ((times.at(-1)! - times[0]!) / 1000),
        model: (BURST - 1) / ((request.lastChunkAt! - request.firstChunkAt!) / 1000),
      };
      if (times.length !== BURST) throw new Error(`${transport}: delivered ${times.length} of ${BURST} chunks`);
    }
    // History bytes of the same conversation: streamed and followed, streamed alone, not streamed.
    for (const [label, agent, follow] of [
      ['streamed, with a follower', 'assistant', true],
      ['streamed, no follower', 'assistant', false],
      ['not streamed', 'plain', false],
    ] as const) {
      const run = await world.client.start({ agent, input: 'talk' });
      if (follow) await followRun(run, { event: () => undefined, chunk: () => undefined }, { intervalMs: 50 });
      else await run.result();
      const { bytes, events } = await run.historySize();
      figures.history.push([label, String(events), String(bytes)]);
    }
  } finally {
    await world.close();
  }
  return figures;
}

async function main() {
  const redis = await startRedis();
  const results: Record<Transport, Figures> = {
    'in-process': await measure('in-process', redis.url),
    redis: await measure('redis', redis.url).finally(() => redis.stop()),
  };
  const ms = (values: number[], p: number) => percentile(values, p).toFixed(1);
  const latency = (label: string, values: number[]) => [
    label,
    ms(values, 0.5),
    ms(values, 0.95),
    Math.max(...values).toFixed(1),
  ];
  console.log(`First-token latency after the fake model wrote its first chunk, ${RUNS} runs each (ms):\n`);
  console.log(
    table(
      ['reader', 'p50', 'p95', 'max'],
      [
        latency('worker SSE, subscribed before the run', results['in-process'].direct),
        latency('Redis, subscribed before the run', results.redis.direct),
        latency('patchloop follow, worker SSE (finds it by heartbeat)', results['in-process'].followed),
        latency('patchloop follow, Redis', results.redis.followed),
      ],
    ),
  );
  console.log(`\nSustained rate, a burst of ${BURST} chunks (chunks/s):\n`);
  console.log(
    table(
      ['transport', 'fake model writes', 'follower receives', 'ratio'],
      (['in-process', 'redis'] as const).map((transport) => {
        const { rate } = results[transport];
        return [transport, rate.model.toFixed(0), rate.channel.toFixed(0), (rate.channel / rate.model).toFixed(2)];
      }),
    ),
  );
  console.log('\nHistory of the same 20-chunk answer (chunks never enter history):\n');
  console.log(
    table(
      ['run', 'events (in-process)', 'bytes (in-process)', 'events (redis)', 'bytes (redis)'],
      results['in-process'].history.map((row, index) => [...row, ...results.redis.history[index]!.slice(1)]),
    ),
  );
}

async function firstChunk(events: AsyncIterable<StreamEvent>): Promise<number> {
  for await (const event of events) if (event.event_type === 'llm_chunk_arrive') return now();
  throw new Error('stream ended without a chunk');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
