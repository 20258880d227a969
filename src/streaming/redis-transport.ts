import type * as RedisLibrary from '@redis/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { EncryptionSettings, RedisChunkSettings } from '../config/environment';
import { EncryptionCodec } from '../storage/encryption-codec';
import type { ChunkTransport, StreamEvent, StreamOffset } from './chunk';

type Logger = { warn(message: string, meta?: Record<string, unknown>): void };
/** A client of the Redis at `url` (not connected yet). */
function redisClient(redis: typeof RedisLibrary, url: string) {
  return redis.createClient({
    url,
    // Commands fail at once while disconnected instead of queueing without bound.
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2000) },
  });
}
type RedisClient = ReturnType<typeof redisClient>;

/** Appends not yet acknowledged by Redis; beyond this, chunks are dropped rather than held in memory. */
const MAX_IN_FLIGHT = 10_000;

/**
 * The shared chunk transport: each run's chunks go to one Redis stream (`XADD`, trimmed to a cap, expiring
 * a while after the last chunk), and followers read it with `XREAD` from wherever they are, so no follower
 * needs to reach the worker that runs the call and chunks outlive that worker. With an encryption key the
 * entries are AES-256-GCM ciphertext, as the payloads in Temporal are. Publishing never fails an LLM call:
 * the transcript is durable in Temporal, chunks are a convenience (a Redis outage drops them, logged).
 */
export class RedisChunkTransport implements ChunkTransport {
  /** Made at first use: the Redis client library is loaded only by processes that use Redis. */
  private client: RedisClient | undefined;
  private created: Promise<RedisClient> | undefined;
  private readonly codec: EncryptionCodec | undefined;
  private readonly logger: Logger;
  private readonly idleMs: number;
  private inFlight = 0;
  private dropped = 0;
  private lastWarning = 0;
  private closed = false;

  constructor(
    private readonly settings: RedisChunkSettings,
    options: {
      encryption?: EncryptionSettings | undefined;
      logger?: Logger;
      idleMs?: number;
      connectTimeoutMs?: number;
    } = {},
  ) {
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.logger = options.logger ?? console;
    this.idleMs = options.idleMs ?? 10 * 60 * 1000;
    this.codec = options.encryption ? new EncryptionCodec(options.encryption) : undefined;
    this.connectTimeoutMs = connectTimeoutMs;
  }

  /** The client (not connected yet), made once. */
  private instance(): Promise<RedisClient> {
    this.created ??= import('@redis/client').then((redis) => {
      const client = redisClient(redis, this.settings.url);
      client.on('error', (error: unknown) => this.warn('Redis connection error', error));
      this.client = client;
      return client;
    });
    return this.created;
  }

  private readonly connectTimeoutMs: number;
  private connecting: Promise<void> | undefined;

  /**
   * The first connection, made on first use (a client that never follows tokens never connects), or an
   * error after `connectTimeoutMs` (the client keeps trying after that).
   */
  private get ready(): Promise<void> {
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const late = setTimeout(
        () =>
          reject(
            new Error(
              `Redis at ${redactedUrl(this.settings.url)} did not answer within ${this.connectTimeoutMs} ms (REDIS_URL)`,
            ),
          ),
        this.connectTimeoutMs,
      );
      late.unref();
      this.instance()
        .then((client) => client.connect())
        .then(
          () => (clearTimeout(late), resolve()),
          (error: unknown) => (clearTimeout(late), reject(error as Error)),
        );
    });
    this.connecting.catch((error: unknown) => this.warn('Redis connection failed', error));
    return this.connecting;
  }

  /** Waits for the first connection: a worker checks Redis at start instead of dropping every chunk. */
  async connected(): Promise<void> {
    await this.ready;
    await this.client!.ping();
  }

  keyOf(runId: string): string {
    return `${this.settings.keyPrefix}${runId}`;
  }

  publish(event: StreamEvent): void {
    if (this.closed) return;
    if (this.inFlight >= MAX_IN_FLIGHT) {
      this.dropped += 1;
      return;
    }
    this.inFlight += 1;
    void this.append(event)
      .catch((error: unknown) => {
        this.dropped += 1;
        this.warn('chunk not published to Redis', error);
      })
      .finally(() => (this.inFlight -= 1));
  }

  /** Chunks that never reached Redis (disconnected, or too many unacknowledged appends). */
  get droppedChunks(): number {
    return this.dropped;
  }

  private async append(event: StreamEvent): Promise<void> {
    // Before the first connection, wait for it (bounded); after, while disconnected, commands fail at
    // once (no offline queue).
    if (!this.client?.isReady) await this.ready;
    const client = this.client!;
    const key = this.keyOf(event.run_id);
    // One connection keeps commands in order, so a run's entries are in publish order.
    await Promise.all([
      client.xAdd(key, '*', await this.encode(event), {
        TRIM: { strategy: 'MAXLEN', strategyModifier: '=', threshold: this.settings.maxEntriesPerRun },
      }),
      client.expire(key, this.settings.ttlSeconds),
    ]);
  }

  /**
   * The run's chunks from the offset on: what the stream holds (the latest attempt of the offset's call),
   * then live entries, until aborted or nothing arrives for `idleMs`. Reads on a connection of its own,
   * because `XREAD BLOCK` holds the connection while it waits.
   */
  async *subscribe(runId: string, from: StreamOffset, signal: AbortSignal): AsyncIterable<StreamEvent> {
    if (signal.aborted) return;
    const reader = (await this.instance()).duplicate();
    reader.on('error', () => undefined);
    const stop = () => reader.destroy();
    signal.addEventListener('abort', stop, { once: true });
    try {
      await reader.connect();
      const key = this.keyOf(runId);
      const held = (await reader.xRange(key, '-', '+')) ?? [];
      const events: StreamEvent[] = [];
      for (const entry of held) events.push(await this.decode(entry.message));
      const cursor = new OffsetCursor(from, latestAttempts(events));
      for (const event of events) if (cursor.admits(event)) yield event;
      let lastId = held.at(-1)?.id ?? '0-0';
      while (!signal.aborted) {
        const reply = (await reader.xRead({ key, id: lastId }, { BLOCK: this.idleMs, COUNT: 1000 })) as Array<{
          messages: Array<{ id: string; message: Record<string, string> }>;
        }> | null;
        if (!reply || reply.length === 0) return;
        for (const { id, message } of reply[0]!.messages) {
          lastId = id;
          const event = await this.decode(message);
          if (cursor.admits(event)) yield event;
        }
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    } finally {
      signal.removeEventListener('abort', stop);
      if (!signal.aborted) reader.destroy();
    }
  }

  /** Waits for every append issued so far, at most `timeoutMs` (a half-open connection never answers). */
  async flush(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    if (!this.connecting) return;
    // A client still retrying, or with appends that never settled: stop it rather than wait for it.
    const client = await this.instance();
    if (client.isReady && this.inFlight === 0) await client.close();
    else client.destroy();
  }

  private async encode(event: StreamEvent): Promise<Record<string, string>> {
    const json = JSON.stringify(event);
    if (!this.codec) return { event: json };
    const [payload] = await this.codec.encode([defaultPayloadConverter.toPayload(event) as Payload]);
    return { sealed: Buffer.from(temporal.api.common.v1.Payload.encode(payload!).finish()).toString('base64') };
  }

  private async decode(message: Record<string, string>): Promise<StreamEvent> {
    if (message['event'] !== undefined) return JSON.parse(message['event']) as StreamEvent;
    if (!this.codec) throw new Error('chunk is encrypted: set PATCHLOOP_ENCRYPTION_KEY to read it');
    const sealed = temporal.api.common.v1.Payload.decode(Buffer.from(message['sealed'] ?? '', 'base64'));
    const [payload] = await this.codec.decode([sealed]);
    return defaultPayloadConverter.fromPayload(payload!) as StreamEvent;
  }

  private warn(message: string, error: unknown): void {
    // At most one warning every 10 s: an outage must not flood the log with one line per chunk.
    if (Date.now() - this.lastWarning < 10_000) return;
    this.lastWarning = Date.now();
    this.logger.warn(message, { error: error instanceof Error ? error.message : String(error), dropped: this.dropped });
  }
}

/** The URL without its password, for messages. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'REDIS_URL';
  }
}

/** The newest attempt of each call among the events. */
function latestAttempts(events: StreamEvent[]): Map<number, number> {
  const latest = new Map<number, number>();
  for (const event of events) latest.set(event.llm_call, Math.max(latest.get(event.llm_call) ?? 0, event.attempt));
  return latest;
}

/**
 * Which events of a run's stream, read in order, a follower at `from` gets: the same ones the in-process
 * hub gives. Earlier calls and attempts are skipped (the newest attempt held replaces older ones); a
 * newer attempt of the call restarts it from chunk 0; a later call moves the cursor on (the offset's
 * call was trimmed away or never streamed).
 */
class OffsetCursor {
  private call: number;
  private attempt: number | undefined;
  private position: number;

  constructor(
    from: StreamOffset,
    private readonly latest: Map<number, number> = new Map(),
  ) {
    this.call = from.llm_call;
    this.attempt = from.attempt;
    this.position = from.chunk_index;
  }

  admits(event: StreamEvent): boolean {
    if (event.llm_call < this.call) return false;
    if (event.llm_call > this.call) {
      this.call = event.llm_call;
      this.attempt = undefined;
      this.position = 0;
    }
    // As in the hub, a newer attempt already held replaces the older one (its chunks are void anyway).
    const newest = this.latest.get(this.call);
    if (this.attempt === undefined) this.attempt = newest ?? event.attempt;
    else if (newest !== undefined && newest > this.attempt) {
      this.attempt = newest;
      this.position = 0;
    }
    if (event.attempt < this.attempt) return false;
    if (event.attempt > this.attempt) {
      this.attempt = event.attempt;
      this.position = 0;
    }
    const index = event.event_type === 'llm_stream_end' ? event.chunks : event.chunk_index;
    if (index < this.position) return false;
    this.position = index + 1;
    if (event.event_type === 'llm_stream_end') {
      if (event.outcome === 'failed' && event.retrying !== false) {
        this.attempt = event.attempt + 1;
      } else {
        this.call += 1;
        this.attempt = undefined;
      }
      this.position = 0;
    }
    return true;
  }
}
