/**
 * `npm run bench:idle`: what waiting costs. N runs (`--runs N`, default 10,000) on one `patchloop worker`
 * process (the compiled CLI, its default workflow cache) whose model's first reply calls `sleep`, against a
 * fast fake model (keepBodies off) and a dev server of the bench's own. W of them (`--wake W`, default
 * 1,000; `--wake all` for every run) sleep until one common time T and are started first, so that with
 * N over the cache they have been evicted by the time they wake; the others sleep for a day. Printed:
 * - the time to start the runs and see them all `waiting` (PatchloopStatus, counted by visibility);
 * - the worker's RSS (from /proc) idle, after a warm-up with 0 runs waiting, and with N/10, N/4, N/2 and
 *   N waiting, beside its workflow cache's size (Prometheus metrics);
 * - while all N wait: the worker's CPU, its activity slots in use, the model requests made, the pending
 *   activities of a sample of runs and the activity task queue's backlog (DescribeTaskQueue);
 * - from T: the time until all W have completed, and when Temporal fired their timers (TimerFired, server
 *   time) and closed them, against T.
 * T is set before the first start from the warm-up's rate with a margin (`--margin`, default 1.5x); when
 * not every run waits by T the report says so. `--max-cached-workflows N` gives the worker a cache of N
 * runs instead of its default (derived from the heap; the report prints it).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { PatchloopClient, type RunHandle } from '../src/client/patchloop-client';
import { configFromEnvironment } from '../src/config/environment';
import { FakeModelServer, type Responder } from '../src/fake-model/server';
import { callTools, reply, toolCall } from '../src/fake-model/steps';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { freshCompiledCli } from '../support/compiled';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';
import { cpuSeconds, rssMib } from './process-stats';
import { percentile, table } from './report';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    wake: { type: 'string', default: '1000' },
    margin: { type: 'string', default: '1.5' },
    'max-cached-workflows': { type: 'string' },
  },
});
const RUNS = Number(flags.runs);
const WAKING = flags.wake === 'all' ? RUNS : Math.min(RUNS, Number(flags.wake));
const MARGIN = Number(flags.margin);
const WARM_UP = 50;
/** Starts in flight at once. */
const STARTS_IN_FLIGHT = 32;
/** How long the RSS is sampled at each level (every 250 ms). */
const SAMPLE_MS = 5000;
/** How long all N wait with nothing to do while the worker's CPU, slots and model requests are watched. */
const IDLE_WINDOW_MS = 20_000;
const DAY_MS = 86_400_000;
const EnumType = temporal.api.enums.v1;

const AGENT = { name: 'sleeper', instructions: 'You sleep until you are told.', waits: { max_seconds: 2 * 86_400 } };

/** The user message names the time to sleep until; after the wait, the model answers at once. */
const responder: Responder = (body) => {
  if (body.messages.some((message) => message['role'] === 'tool')) return reply('Awake.');
  const until = /until (\S+)/.exec(String(body.messages.at(-1)?.['content']))![1]!;
  return callTools([toolCall('call_sleep', 'sleep', { until, reason: 'the bench' })]);
};

/** The worker's RSS sampled every 250 ms for `ms`: median and max. */
async function sampleRss(pid: number, ms = SAMPLE_MS): Promise<{ median: number; max: number }> {
  const samples: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    samples.push(rssMib(pid));
    await sleep(250);
  }
  return { median: percentile(samples, 0.5), max: Math.max(...samples) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Each metric of a Prometheus page, by name and labels as printed (`name{a="b"}`). */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const metrics = new Map<string, number>();
  for (const match of text.matchAll(/^(\w+(?:\{[^}]*\})?) (\S+)$/gm)) metrics.set(match[1]!, Number(match[2]));
  return metrics;
}

/** The sum of a metric over its label sets whose labels include `labels`. */
function metric(metrics: Map<string, number>, name: string, labels = ''): number {
  let sum = 0;
  for (const [key, value] of metrics)
    if ((key === name || key.startsWith(`${name}{`)) && key.includes(labels)) sum += value;
  return sum;
}

/** Calls `start(index)` for each index, `STARTS_IN_FLIGHT` at a time. */
async function startAll<T>(indexes: number[], start: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(indexes.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: STARTS_IN_FLIGHT }, async () => {
      while (next < indexes.length) {
        const slot = next++;
        results[slot] = await start(indexes[slot]!);
      }
    }),
  );
  return results;
}

interface Bench {
  client: PatchloopClient;
  temporalClient: Client;
  worker: WorkerProcess;
  fake: FakeModelServer;
  metricsUrl: string;
  taskQueue: string;
}

async function count(bench: Bench, query: string): Promise<number> {
  return (await bench.temporalClient.workflow.count(query)).count;
}

/** Polls visibility until `target` runs match `query`; answers when they did (ms). */
async function countReaches(bench: Bench, query: string, target: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await count(bench, query)) >= target) return Date.now();
    if (Date.now() > deadline) throw new Error(`fewer than ${target} runs match ${query} after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

const WAITING = 'PatchloopStatus = "waiting"';

/** Starts runs `from` to `to` (exclusive) sleeping until `until`, and waits until all started are waiting. */
async function startBatch(
  bench: Bench,
  range: { from: number; to: number; until: number },
): Promise<{ runs: RunHandle[]; ms: number }> {
  const started = Date.now();
  const indexes = Array.from({ length: range.to - range.from }, (_, offset) => range.from + offset);
  const until = new Date(range.until).toISOString();
  const runs = await startAll(indexes, (index) =>
    bench.client.start(
      { agent: AGENT.name, input: `Run ${index}: sleep until ${until}` },
      { workflowId: `idle-${index}` },
    ),
  );
  await countReaches(bench, WAITING, range.to, 60_000 + (range.to - range.from) * 1000);
  return { runs, ms: Date.now() - started };
}

/** 50 runs that sleep a second and complete: loads the worker's code and measures its rate. */
async function warmUp(bench: Bench): Promise<number> {
  const started = Date.now();
  const runs = await startAll(
    Array.from({ length: WARM_UP }, (_, index) => index),
    (index) =>
      bench.client.start({
        agent: AGENT.name,
        input: `Warm-up ${index}: sleep until ${new Date(Date.now() + 1000).toISOString()}`,
      }),
  );
  for (const run of runs) await run.result();
  return (Date.now() - started) / WARM_UP;
}

interface Level {
  waiting: number;
  rss: { median: number; max: number };
  cached: number;
}

async function level(bench: Bench, waiting: number): Promise<Level> {
  const rss = await sampleRss(bench.worker.child.pid!);
  const cached = metric(await scrape(bench.metricsUrl), 'temporal_sticky_cache_size');
  return { waiting, rss, cached };
}

/** While every run waits: what the worker does over IDLE_WINDOW_MS, and what is pending on the server. */
async function idleWindow(bench: Bench, runs: RunHandle[]) {
  const pid = bench.worker.child.pid!;
  const cpuBefore = cpuSeconds(pid);
  const requestsBefore = bench.fake.requests.length;
  const slots: number[] = [];
  const end = Date.now() + IDLE_WINDOW_MS;
  while (Date.now() < end) {
    const metrics = await scrape(bench.metricsUrl);
    slots.push(
      metric(metrics, 'temporal_worker_task_slots_used', 'worker_type="ActivityWorker"') +
        metric(metrics, 'temporal_worker_task_slots_used', 'worker_type="LocalActivityWorker"'),
    );
    await sleep(1000);
  }
  const cpu = cpuSeconds(pid) - cpuBefore;
  const sample = runs.filter((_, index) => index % Math.max(1, Math.floor(runs.length / 100)) === 0).slice(0, 100);
  let pending = 0;
  for (const run of sample) pending += (await run.workflow.describe()).raw.pendingActivities?.length ?? 0;
  const queue = await bench.temporalClient.workflowService.describeTaskQueue({
    namespace: 'default',
    taskQueue: { name: bench.taskQueue, kind: EnumType.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: EnumType.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    reportStats: true,
  });
  return {
    cpuPercent: (cpu / (IDLE_WINDOW_MS / 1000)) * 100,
    slotsMax: Math.max(...slots),
    requests: bench.fake.requests.length - requestsBefore,
    sampled: sample.length,
    pending,
    backlog: Number(queue.stats?.approximateBacklogCount ?? 0),
  };
}

/** Server times (ms) of a run's TimerFired and of its close. */
async function wakeTimes(run: RunHandle): Promise<{ fired: number; closed: number }> {
  const events = (await run.workflow.fetchHistory()).events ?? [];
  const at = (type: temporal.api.enums.v1.EventType) => {
    const event = events.find((entry) => entry.eventType === type);
    if (!event) throw new Error(`${run.workflowId} has no ${EnumType.EventType[type]}`);
    return Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6);
  };
  return {
    fired: at(EnumType.EventType.EVENT_TYPE_TIMER_FIRED),
    closed: at(EnumType.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
  };
}

async function setUp(): Promise<Bench & { close(): Promise<void>; cacheBound: number }> {
  process.env['PATCHLOOP_TEST_CLI'] = await freshCompiledCli();
  const server = await startDevServer({
    port: await freePort(),
    dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-bench-idle-')), 'temporal.db'),
  });
  const fake = await FakeModelServer.start({ responder, keepBodies: false });
  const taskQueue = 'idle';
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const worker = await spawnWorker({
    address: server.address,
    taskQueue,
    modelUrl: fake.url,
    agents: [AGENT],
    args: [
      '--metrics-address',
      metricsAddress,
      ...(flags['max-cached-workflows'] ? ['--max-cached-workflows', flags['max-cached-workflows']] : []),
    ],
  });
  const cacheBound = Number(/caches up to (\d+) runs/.exec(worker.output())?.[1]);
  const connection = await Connection.connect({ address: server.address });
  const client = PatchloopClient.on(connection, { ...configFromEnvironment({}), taskQueue });
  const temporalClient = new Client({ connection });
  return {
    client,
    temporalClient,
    worker,
    fake,
    metricsUrl: `http://${metricsAddress}/metrics`,
    taskQueue,
    cacheBound,
    close: async () => {
      await worker.kill('SIGTERM');
      await connection.close();
      await fake.close();
      await server.stop();
    },
  };
}

/** The counts of waiting runs at which the RSS is sampled (besides N). */
function levelCounts(): number[] {
  return [...new Set([RUNS / 10, RUNS / 4, RUNS / 2].map(Math.round))].filter((value) => value > 0 && value < RUNS);
}

async function main() {
  const bench = await setUp();
  try {
    const idle = await level(bench, 0);
    const msPerRun = await warmUp(bench);
    const afterWarmUp = await level(bench, 0);
    const levels = levelCounts();
    // T: the whole start at the warm-up's rate, times the margin, plus the pauses to sample the levels.
    const wakeAt = Date.now() + RUNS * msPerRun * MARGIN + (levels.length + 1) * SAMPLE_MS + IDLE_WINDOW_MS + 30_000;
    console.log(
      `worker caches up to ${bench.cacheBound} runs; warm-up ${msPerRun.toFixed(0)} ms a run; ${RUNS} runs, ${WAKING} waking at ${new Date(wakeAt).toISOString()}`,
    );
    const rows: Level[] = [idle, afterWarmUp];
    const runs: RunHandle[] = [];
    let startMs = 0;
    for (const to of [...levels, RUNS]) {
      // The waking runs first; the rest sleep a day.
      for (const [from, until] of [
        [runs.length, wakeAt],
        [Math.max(runs.length, WAKING), wakeAt + DAY_MS],
      ] as const) {
        const end = until === wakeAt ? Math.min(to, WAKING) : to;
        if (end <= from) continue;
        const batch = await startBatch(bench, { from, to: end, until });
        runs.push(...batch.runs);
        startMs += batch.ms;
      }
      console.log(`${to} waiting after ${(startMs / 1000).toFixed(0)} s of starts`);
      rows.push(await level(bench, to));
    }
    const allWaitingAt = Date.now();
    const ended = await count(bench, 'ExecutionStatus != "Running"');
    if (ended !== WARM_UP) throw new Error(`${ended - WARM_UP} runs ended before T instead of waiting`);
    const quiet = await idleWindow(bench, runs);
    await report({ bench, rows, quiet, startMs, allWaitingAt, wakeAt, waking: runs.slice(0, WAKING) });
  } finally {
    await bench.close();
  }
}

async function report(options: {
  bench: Bench;
  rows: Level[];
  quiet: Awaited<ReturnType<typeof idleWindow>>;
  startMs: number;
  allWaitingAt: number;
  wakeAt: number;
  waking: RunHandle[];
}) {
  const { bench, rows, quiet, startMs, allWaitingAt, wakeAt, waking } = options;
  const before = await scrape(bench.metricsUrl);
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMib(bench.worker.child.pid!))), 250);
  await sleep(Math.max(0, wakeAt - Date.now()));
  const completedAt = await countReaches(bench, 'ExecutionStatus = "Completed"', WAKING + WARM_UP, 1_800_000);
  clearInterval(sampler);
  const after = await scrape(bench.metricsUrl);
  const times: Array<{ fired: number; closed: number }> = [];
  await startAll(
    waking.map((_, index) => index),
    async (index) => times.push(await wakeTimes(waking[index]!)),
  );
  const late = (values: number[]) =>
    `${percentile(values, 0.5).toFixed(0)} / ${percentile(values, 0.95).toFixed(0)} / ${Math.max(...values).toFixed(0)}`;
  const delta = (name: string) => String(Math.round(metric(after, name) - metric(before, name)));
  console.log(`\nWorker memory (RSS MiB, sampled ${SAMPLE_MS / 1000} s each) by runs waiting:\n`);
  console.log(
    table(
      ['runs waiting', 'RSS median', 'RSS max', 'runs in the cache'],
      rows.map((row, index) => [
        index === 0 ? '0 (idle)' : index === 1 ? `0 (after ${WARM_UP} runs)` : String(row.waiting),
        row.rss.median.toFixed(0),
        row.rss.max.toFixed(0),
        String(row.cached),
      ]),
    ),
  );
  console.log(
    `\n${RUNS} runs started and waiting in ${(startMs / 1000).toFixed(1)} s (${(startMs / RUNS).toFixed(1)} ms a run, ${((RUNS * 1000) / startMs).toFixed(1)} runs/s); all waiting ${((wakeAt - allWaitingAt) / 1000).toFixed(0)} s before T${allWaitingAt > wakeAt ? ' (AFTER T: the wake overlapped the starts)' : ''}`,
  );
  console.log(
    `While all ${RUNS} waited (${IDLE_WINDOW_MS / 1000} s): worker CPU ${quiet.cpuPercent.toFixed(1)}%, activity slots in use at most ${quiet.slotsMax}, model requests ${quiet.requests}, pending activities in ${quiet.sampled} runs described ${quiet.pending}, activity backlog ${quiet.backlog}`,
  );
  console.log(
    `\n${WAKING} timers at T: all completed ${((completedAt - wakeAt) / 1000).toFixed(1)} s after T; worker peak RSS ${peakRss.toFixed(0)} MiB; cache hits ${delta('temporal_sticky_cache_hit')}, misses ${delta('temporal_sticky_cache_miss')}, forced evictions ${delta('temporal_sticky_cache_total_forced_eviction')}`,
  );
  console.log(
    `ms after T, p50 / p95 / max: timer fired ${late(times.map((time) => time.fired - wakeAt))}; run completed ${late(times.map((time) => time.closed - wakeAt))}`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
