import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseKey, type RedisChunkSettings } from '../../src/config/environment';
import type { StreamEvent, StreamOffset } from '../../src/streaming/chunk';
import { ChunkHub } from '../../src/streaming/chunk-hub';
import { RedisChunkTransport } from '../../src/streaming/redis-transport';
import { chunkEvent, endEvent, eventLabel } from '../support/chunk-events';
import { startRedis } from '../../support/redis';
import { eventually } from '../support/wait';

let run = 0;
/** A fresh run id per test: every test has its own stream. */
const nextRun = () => `redis-test-${process.pid}-${(run += 1)}`;

const chunk = (runId: string, llm_call: number, attempt: number, chunk_index: number) =>
  chunkEvent(llm_call, attempt, chunk_index, runId);
/** A failed attempt's end says it is retried, as the LLM activity's does. */
const end = (
  runId: string,
  llm_call: number,
  attempt: number,
  chunks: number,
  outcome: 'completed' | 'failed' = 'completed',
): StreamEvent => ({
  ...endEvent(llm_call, attempt, chunks, outcome, runId),
  ...(outcome === 'failed' ? { retrying: true } : {}),
});
const label = eventLabel;

/** Every event a subscriber gets until the stream has been idle for the transport's idle time. */
async function drain(events: AsyncIterable<StreamEvent>): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of events) seen.push(label(event));
  return seen;
}

const settings = (overrides: Partial<RedisChunkSettings> = {}): RedisChunkSettings => ({
  url: inject('redisUrl'),
  maxEntriesPerRun: 1000,
  ttlSeconds: 3600,
  keyPrefix: 'patchloop:test:',
  ...overrides,
});

const quiet = { warn: () => undefined };
let raw: ReturnType<typeof createClient>;
beforeAll(async () => {
  raw = createClient({ url: inject('redisUrl') });
  await raw.connect();
});
afterAll(async () => {
  await raw.close();
});

describe('Redis Streams chunk transport (real redis-server)', () => {
  it('gives every offset exactly what the in-process hub gives, across calls and retried attempts', async () => {
    const runId = nextRun();
    const redis = new RedisChunkTransport(settings(), { idleMs: 300, logger: quiet });
    const hub = new ChunkHub(8, 300);
    const sequence: StreamEvent[] = [
      chunk(runId, 1, 1, 0),
      chunk(runId, 1, 1, 1),
      end(runId, 1, 1, 2),
      chunk(runId, 2, 1, 0),
      chunk(runId, 2, 1, 1),
      chunk(runId, 2, 1, 2),
      end(runId, 2, 1, 3, 'failed'),
      chunk(runId, 2, 2, 0),
      chunk(runId, 2, 2, 1),
      end(runId, 2, 2, 2),
      chunk(runId, 3, 1, 0),
    ];
    for (const event of sequence) {
      redis.publish(event);
      hub.publish(event);
    }
    await redis.flush();
    const offsets: StreamOffset[] = [
      { llm_call: 1, chunk_index: 0 },
      { llm_call: 1, chunk_index: 1 },
      { llm_call: 1, chunk_index: 2 },
      { llm_call: 2, chunk_index: 0 },
      { llm_call: 2, chunk_index: 1 },
      { llm_call: 2, chunk_index: 0, attempt: 1 },
      { llm_call: 2, chunk_index: 2, attempt: 1 },
      { llm_call: 2, chunk_index: 1, attempt: 2 },
      { llm_call: 3, chunk_index: 0 },
      { llm_call: 3, chunk_index: 1 },
      { llm_call: 4, chunk_index: 0 },
    ];
    const fromRedis: string[][] = [];
    const fromHub: string[][] = [];
    for (const offset of offsets) {
      fromRedis.push(await drain(redis.subscribe(runId, offset, new AbortController().signal)));
      fromHub.push(await drain(hub.subscribe(runId, offset, new AbortController().signal)));
    }
    expect(fromRedis).toEqual(fromHub);
    // Spot checks, so the comparison cannot pass on two empty readers.
    expect(fromRedis[0]).toEqual(['c1.1.0', 'c1.1.1', 'end1.1', 'c2.2.0', 'c2.2.1', 'end2.2', 'c3.1.0']);
    // An offset in a replaced attempt reads the newer attempt from its start.
    expect(fromRedis[6]).toEqual(['c2.2.0', 'c2.2.1', 'end2.2', 'c3.1.0']);
    await redis.close();
  });

  it('streams live to a follower that waits, and two transports (two workers) share one stream', async () => {
    const runId = nextRun();
    const first = new RedisChunkTransport(settings(), { idleMs: 2000, logger: quiet });
    const second = new RedisChunkTransport(settings(), { idleMs: 2000, logger: quiet });
    const follower = new RedisChunkTransport(settings(), { idleMs: 2000, logger: quiet });
    const seen: string[] = [];
    const abort = new AbortController();
    const reading = (async () => {
      for await (const event of follower.subscribe(runId, { llm_call: 1, chunk_index: 0 }, abort.signal)) {
        seen.push(label(event));
        if (seen.length === 5) abort.abort();
      }
    })();
    // The follower subscribed before anything was published; the first attempt dies on one worker and
    // the retry streams from another.
    await eventually(async () =>
      (await raw.clientList()).some((client) => client.cmd === 'xread') ? true : undefined,
    );
    first.publish(chunk(runId, 1, 1, 0));
    first.publish(end(runId, 1, 1, 1, 'failed'));
    await first.flush();
    second.publish(chunk(runId, 1, 2, 0));
    second.publish(chunk(runId, 1, 2, 1));
    second.publish(end(runId, 1, 2, 2));
    await reading;
    expect(seen).toEqual(['c1.1.0', 'failed1.1', 'c1.2.0', 'c1.2.1', 'end1.2']);
    await Promise.all([first.close(), second.close(), follower.close()]);
  });

  it('caps each run at its entry limit and lets the stream expire after the last chunk', async () => {
    const runId = nextRun();
    const redis = new RedisChunkTransport(settings({ maxEntriesPerRun: 10, ttlSeconds: 120 }), { logger: quiet });
    for (let index = 0; index < 50; index += 1) redis.publish(chunk(runId, 1, 1, index));
    await redis.flush();
    const key = redis.keyOf(runId);
    expect(await raw.xLen(key)).toBe(10);
    const ttl = await raw.ttl(key);
    expect(ttl).toBeGreaterThan(100);
    expect(ttl).toBeLessThanOrEqual(120);
    // The oldest entries went; a follower from chunk 0 gets the 10 that are left.
    const tail = new RedisChunkTransport(settings(), { idleMs: 200, logger: quiet });
    const got = await drain(tail.subscribe(runId, { llm_call: 1, chunk_index: 0 }, new AbortController().signal));
    expect(got).toEqual(Array.from({ length: 10 }, (_, index) => `c1.1.${40 + index}`));
    await Promise.all([redis.close(), tail.close()]);
  });

  it('stores ciphertext when an encryption key is set; only a holder of the key reads it', async () => {
    const runId = nextRun();
    const key = parseKey(Buffer.alloc(32, 7).toString('base64'), 'k1');
    const sealed = new RedisChunkTransport(settings(), { encryption: { active: key, previous: [] }, logger: quiet });
    sealed.publish({ ...chunk(runId, 1, 1, 0), chunk: 'canary-secret-token' });
    await sealed.flush();
    const entries = await raw.xRange(sealed.keyOf(runId), '-', '+');
    expect(entries).toHaveLength(1);
    expect(JSON.stringify(entries)).not.toContain('canary-secret-token');
    const reader = new RedisChunkTransport(settings(), {
      encryption: { active: key, previous: [] },
      idleMs: 200,
      logger: quiet,
    });
    const [event] = await collect(
      reader.subscribe(runId, { llm_call: 1, chunk_index: 0 }, new AbortController().signal),
    );
    expect(event).toMatchObject({ chunk: 'canary-secret-token', chunk_index: 0 });
    const keyless = new RedisChunkTransport(settings(), { idleMs: 200, logger: quiet });
    await expect(
      drain(keyless.subscribe(runId, { llm_call: 1, chunk_index: 0 }, new AbortController().signal)),
    ).rejects.toThrow(/PATCHLOOP_ENCRYPTION_KEY/);
    await Promise.all([sealed.close(), reader.close(), keyless.close()]);
  });

  it('an aborted follower returns at once and gives its connection back', async () => {
    const runId = nextRun();
    const redis = new RedisChunkTransport(settings(), { logger: quiet });
    await redis.connected();
    const blockedReaders = async () => (await raw.clientList()).filter((client) => client.cmd === 'xread').length;
    const abort = new AbortController();
    const reading = drain(redis.subscribe(runId, { llm_call: 1, chunk_index: 0 }, abort.signal));
    await eventually(async () => ((await blockedReaders()) === 1 ? true : undefined));
    const abortedAt = Date.now();
    abort.abort();
    expect(await reading).toEqual([]);
    expect(Date.now() - abortedAt).toBeLessThan(1000);
    await eventually(async () => ((await blockedReaders()) === 0 ? true : undefined));
    await redis.close();
  });

  it('survives Redis going away: publishing never throws, chunks resume once Redis is back', async () => {
    const own = await startRedis();
    const runId = nextRun();
    const warnings: string[] = [];
    const redis = new RedisChunkTransport(settings({ url: own.url }), {
      logger: { warn: (message) => warnings.push(message) },
      idleMs: 300,
    });
    await redis.connected();
    redis.publish(chunk(runId, 1, 1, 0));
    await redis.flush();
    await own.stop();
    for (let index = 1; index < 5; index += 1) redis.publish(chunk(runId, 1, 1, index));
    await redis.flush();
    expect(redis.droppedChunks).toBe(4);
    expect(warnings.length).toBeGreaterThan(0);
    // The same server comes back (empty: it keeps nothing on disk); the transport reconnects by itself.
    const back = await startRedis({ port: own.port });
    const probe = createClient({ url: back.url });
    await probe.connect();
    let index = 5;
    await eventually(async () => {
      redis.publish(chunk(runId, 1, 1, index));
      index += 1;
      await redis.flush();
      return (await probe.xLen(redis.keyOf(runId))) > 0 ? true : undefined;
    });
    await redis.close();
    await probe.close();
    await back.stop();
  });
});

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}
