import { Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { followRun, type FollowOutput } from '../../src/client/follow';
import { configFromEnvironment, type PatchloopConfig } from '../../src/config/environment';
import { FakeModelServer } from '../../src/fake-model/server';
import { reply } from '../../src/fake-model/steps';
import type { StreamEvent } from '../../src/streaming/chunk';
import { startWorld, temporalAddress, type TestWorld } from '../support/temporal';
import { replyReceived } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index} `);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A Redis stream namespace of its own per test. */
function redisConfig(): Pick<PatchloopConfig, 'redis'> {
  return {
    redis: {
      url: inject('redisUrl'),
      maxEntriesPerRun: 10_000,
      ttlSeconds: 600,
      keyPrefix: `patchloop:${randomUUID()}:`,
    },
  };
}

/** A client of its own (as another service would have), reading chunks from Redis only. */
async function redisClient(config: Pick<PatchloopConfig, 'redis' | 'taskQueue'>): Promise<PatchloopClient> {
  const client = PatchloopClient.on(await Connection.connect({ address: temporalAddress() }), {
    ...configFromEnvironment({}),
    ...config,
  });
  cleanups.push(() => client.close());
  return client;
}

function chunkCollector() {
  const chunks: StreamEvent[] = [];
  const output: FollowOutput = { event: () => undefined, chunk: (event) => chunks.push(event) };
  return { chunks, output };
}
const text = (chunks: StreamEvent[], attempt?: number) =>
  chunks
    .filter((event) => event.event_type === 'llm_chunk_arrive' && (attempt === undefined || event.attempt === attempt))
    .map((event) => (event.event_type === 'llm_chunk_arrive' ? event.chunk : ''))
    .join('');

describe('shared token stream (Redis Streams, real redis-server)', () => {
  it('a follower that cannot reach any worker gets every token through Redis', async () => {
    const shared = redisConfig();
    const world: TestWorld = await startWorld({
      // The worker announces an endpoint nobody can reach: only Redis carries the chunks.
      config: { ...shared, streamUrl: 'http://127.0.0.1:9' },
      fake: { script: [reply(words(25), { chunkDelayMs: 30 })] },
    });
    cleanups.push(() => world.close());
    const client = await redisClient({ ...shared, taskQueue: world.config.taskQueue });
    const run = await client.start({ agent: 'assistant', input: 'talk' });
    const { chunks, output } = chunkCollector();
    const result = await followRun(run, output);
    expect(text(chunks)).toBe(result.answer);
    expect(chunks.filter((event) => event.event_type === 'llm_chunk_arrive')).toHaveLength(25);
  });

  it('chunks outlive the worker: after it stopped, a new client reads the whole call from Redis', async () => {
    const shared = redisConfig();
    const world: TestWorld = await startWorld({ config: shared, fake: { script: [reply(words(12))] } });
    cleanups.push(() => world.close());
    const run = await world.client.start({ agent: 'assistant', input: 'talk' });
    const result = await run.result();
    await world.stopWorker();
    const later = await redisClient({ ...shared, taskQueue: world.config.taskQueue });
    const events: StreamEvent[] = [];
    const abort = new AbortController();
    for await (const event of later.chunks!.subscribe(run.workflowId, { llm_call: 1, chunk_index: 0 }, abort.signal)) {
      events.push(event);
      if (event.event_type === 'llm_stream_end') break;
    }
    expect(text(events)).toBe(result.answer);
    expect(events.at(-1)).toMatchObject({ event_type: 'llm_stream_end', outcome: 'completed', chunks: 12 });
  });

  it('kill -9 mid-stream: the follower keeps its place in Redis and gets the retry from another worker', async () => {
    const shared = redisConfig();
    const taskQueue = `shared-stream-${randomUUID()}`;
    const fake = await FakeModelServer.start({
      script: [{ kind: 'hang', chunks: ['partial ', 'words '] }, reply(words(10), { chunkDelayMs: 40 })],
    });
    cleanups.push(() => fake.close());
    const workers: WorkerProcess[] = [];
    cleanups.push(async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
    });
    const agents = [{ name: 'assistant', instructions: 'x', tools: [], limits: { heartbeat_timeout_seconds: 2 } }];
    const env = {
      REDIS_URL: shared.redis!.url,
      PATCHLOOP_REDIS_KEY_PREFIX: shared.redis!.keyPrefix,
      // Nothing reaches a worker's own endpoint: every chunk the follower gets came through Redis.
      PATCHLOOP_STREAM_URL: 'http://127.0.0.1:9',
    };
    const spawn = async () => {
      const worker = await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents, env });
      workers.push(worker);
      return worker;
    };
    const first = await spawn();
    const client = await redisClient({ ...shared, taskQueue });
    const run = await client.start({ agent: 'assistant', input: 'talk' });
    const { chunks, output } = chunkCollector();
    const following = followRun(run, output);
    await replyReceived(run, 'partial words '.length);
    await first.kill('SIGKILL');
    await spawn();
    const result = await following;
    expect(result.answer).toBe(words(10).join(''));
    // The dead attempt's chunks came first, then the retry from its chunk 0, each chunk once.
    expect(text(chunks, 1)).toBe('partial words ');
    const retried = chunks.filter((event) => event.event_type === 'llm_chunk_arrive' && event.attempt === 2);
    expect(retried.map((event) => (event.event_type === 'llm_chunk_arrive' ? event.chunk_index : -1))).toEqual(
      Array.from({ length: 10 }, (_, index) => index),
    );
    expect(text(chunks, 2)).toBe(result.answer);
  });
});
