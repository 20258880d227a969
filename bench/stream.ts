/**
 * `npm run bench:stream`: token streaming through the side channel, measured side by side with the
 * fake model's own stream: first-token latency, sustained chunks per second, and history bytes of the
 * same run with a follower, without one, and without streaming at all.
 */
import { followRun, type FollowOutput } from '../src/client/follow';
import type { Responder } from '../src/fake-model/server';
import type { StreamEvent } from '../src/streaming/chunk';
import { readChunks } from '../src/streaming/chunk-client';
import { percentile, table } from './report';
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

async function main() {
  const world = await startBenchWorld(responder, {
    agents: [
      { name: 'assistant', instructions: 'x', tools: [] },
      { name: 'plain', instructions: 'x', tools: [], stream: false },
    ],
  });
  const url = world.worker.streamUrl;
  const direct: number[] = [];
  const followed: number[] = [];
  let rate = { channel: 0, model: 0 };
  const history: string[][] = [];
  try {
    // First token: a reader subscribed to the side channel before the run starts, and `follow`, which
    // discovers the stream through the LLM activity's heartbeat.
    for (let index = 0; index < RUNS; index += 1) {
      const id = `stream-${index}-${Date.now()}`;
      const abort = new AbortController();
      const first = firstChunk(
        readChunks({ url, token: world.worker.streamToken(id) }, id, { llm_call: 1, chunk_index: 0 }, abort.signal),
      );
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'talk' }, { workflowId: id });
      const receivedAt = await first;
      abort.abort();
      await run.result();
      direct.push(receivedAt - world.fake.requests[before]!.firstChunkAt!);
    }
    for (let index = 0; index < RUNS; index += 1) {
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'talk' });
      let receivedAt = 0;
      const output: FollowOutput = { event: () => undefined, chunk: () => (receivedAt ||= now()) };
      await followRun(run, output, { intervalMs: 50 });
      followed.push(receivedAt - world.fake.requests[before]!.firstChunkAt!);
    }
    // Sustained rate: a burst of chunks with no pause between them.
    {
      const id = `burst-${Date.now()}`;
      const abort = new AbortController();
      const times: number[] = [];
      const reading = (async () => {
        for await (const event of readChunks(
          { url, token: world.worker.streamToken(id) },
          id,
          { llm_call: 1, chunk_index: 0 },
          abort.signal,
        )) {
          if (event.event_type === 'llm_stream_end') break;
          times.push(now());
        }
      })();
      const before = world.fake.requests.length;
      const run = await world.client.start({ agent: 'assistant', input: 'burst' }, { workflowId: id });
      await run.result();
      await reading;
      const request = world.fake.requests[before]!;
      rate = {
        channel: (times.length - 1) / ((times.at(-1)! - times[0]!) / 1000),
        model: (BURST - 1) / ((request.lastChunkAt! - request.firstChunkAt!) / 1000),
      };
      if (times.length !== BURST) throw new Error(`side channel delivered ${times.length} of ${BURST} chunks`);
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
      history.push([label, String(events), String(bytes)]);
    }
  } finally {
    await world.close();
  }
  const ms = (values: number[], p: number) => percentile(values, p).toFixed(1);
  console.log(`First-token latency after the fake model wrote its first chunk, ${RUNS} runs each (ms):\n`);
  console.log(
    table(
      ['reader', 'p50', 'p95', 'max'],
      [
        [
          'side channel (SSE, subscribed before the run)',
          ms(direct, 0.5),
          ms(direct, 0.95),
          Math.max(...direct).toFixed(1),
        ],
        [
          'patchloop follow (finds the stream by heartbeat)',
          ms(followed, 0.5),
          ms(followed, 0.95),
          Math.max(...followed).toFixed(1),
        ],
      ],
    ),
  );
  console.log(`\nSustained rate, a burst of ${BURST} chunks:\n`);
  console.log(
    table(
      ['source', 'chunks/s'],
      [
        ['fake model writes', rate.model.toFixed(0)],
        ['side channel delivers', rate.channel.toFixed(0)],
        ['ratio', (rate.channel / rate.model).toFixed(2)],
      ],
    ),
  );
  console.log('\nHistory of the same 20-chunk answer (chunks never enter history):\n');
  console.log(table(['run', 'events', 'history bytes'], history));
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
