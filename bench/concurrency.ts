/**
 * `npm run bench:concurrency`: C concurrent agentRuns on one worker process (the real CLI worker, so
 * its memory is the worker's alone), each 5 tool iterations against a fake model that takes 300 ms per
 * call. For each C (BENCH_CONCURRENCY, default 100,500,1000), dev server (BENCH_SERVERS: `stock`, the
 * `embedded` default's settings, `memory` for those settings without SQLite; default stock,memory) and
 * worker settings (BENCH_SETTINGS: `default`, `recommended` = RECOMMENDED_ARGS, `v8-heap` = the CLI's
 * default but with V8's own heap growth, `--heap-growing-percent 0`; default all three): runs
 * per second, failures, the overhead per model call above the model's 300 ms (p50/p95), the worker's
 * peak RSS and heap, and from its Prometheus metrics the workflow cache's hits, misses (each a full
 * replay of the run's history, for a workflow task or a query) and forced evictions, side by side.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment } from '../src/config/environment';
import { FakeModelServer, type Responder } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { spawnWorker } from '../support/worker-process';
import { rssMib } from './process-stats';
import { percentile, table } from './report';

const LEVELS = (process.env['BENCH_CONCURRENCY'] ?? '100,500,1000').split(',').map(Number);
const SERVERS = (process.env['BENCH_SERVERS'] ?? 'stock,memory').split(',') as Array<'stock' | 'embedded' | 'memory'>;
type Settings = 'default' | 'recommended' | 'v8-heap';
const SETTINGS = (process.env['BENCH_SETTINGS'] ?? 'default,recommended,v8-heap').split(',') as Settings[];
/** Where memory matters more than the replays of evicted runs: a cache of 250 runs. */
const RECOMMENDED_ARGS = ['--max-cached-workflows', '250'];
const SETTINGS_ARGS: Record<Settings, string[]> = {
  default: [],
  recommended: RECOMMENDED_ARGS,
  'v8-heap': ['--heap-growing-percent', '0'],
};
const ITERATIONS = 5;
const MODEL_MS = 300;

const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= ITERATIONS) return reply('done', { firstChunkDelayMs: MODEL_MS });
  return callTools([{ id: `call_${done}`, name: 'add', arguments: `{"a": ${done}, "b": 1}` }], {
    firstChunkDelayMs: MODEL_MS,
  });
};

/** Sums of the samples of each metric a Prometheus text page lists (all label sets together). */
function metricSums(text: string): Map<string, number> {
  const sums = new Map<string, number>();
  const add = (name: string, value: number) => sums.set(name, (sums.get(name) ?? 0) + value);
  for (const match of text.matchAll(/^(\w+)(?:\{([^}]*)\})? (\S+)$/gm)) {
    add(match[1]!, Number(match[3]));
    // And per source, for the LLM activity's requests.
    const source = /source="(\w+)"/.exec(match[2] ?? '')?.[1];
    if (source) add(`${match[1]!}:${source}`, Number(match[3]));
  }
  return sums;
}

async function scrape(url: string): Promise<Map<string, number>> {
  return metricSums(await (await fetch(url)).text());
}

async function level(
  concurrency: number,
  server: 'stock' | 'embedded' | 'memory',
  settings: Settings,
): Promise<string[]> {
  const dev = await startDevServer({
    port: await freePort(),
    ...(server === 'memory'
      ? {}
      : { dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-bench-concurrency-')), 'temporal.db') }),
    stock: server === 'stock',
  });
  const fake = await FakeModelServer.start({ responder, keepBodies: false });
  const taskQueue = `concurrency-${concurrency}`;
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const metricsUrl = `http://${metricsAddress}/metrics`;
  const worker = await spawnWorker({
    address: dev.address,
    taskQueue,
    modelUrl: fake.url,
    agents: [{ name: 'assistant', instructions: 'Add.', tools: ['add'] }],
    args: ['--metrics-address', metricsAddress, ...SETTINGS_ARGS[settings]],
  });
  const client = PatchloopClient.on(await Connection.connect({ address: dev.address }), {
    ...configFromEnvironment({}),
    taskQueue,
  });
  let peakRss = rssMib(worker.child.pid!);
  let peakHeap = 0;
  const sampleRss = setInterval(() => (peakRss = Math.max(peakRss, rssMib(worker.child.pid!))), 250);
  const sampleHeap = setInterval(() => {
    scrape(metricsUrl).then(
      (metrics) => (peakHeap = Math.max(peakHeap, metrics.get('patchloop_worker_heap_used_bytes') ?? 0)),
      () => undefined,
    );
  }, 1000);
  const started = Date.now();
  const overheads: number[] = [];
  let failures = 0;
  let metrics = new Map<string, number>();
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async (_, index) => {
        const runStarted = Date.now();
        try {
          const run = await client.start({ agent: 'assistant', input: `add ${index}` });
          const result = await run.result();
          if (result.status !== 'completed') failures += 1;
          overheads.push((Date.now() - runStarted) / (ITERATIONS + 1) - MODEL_MS);
        } catch {
          failures += 1;
        }
      }),
    );
    // The SDK exports its counters on an interval: wait until every run is counted.
    const deadline = Date.now() + 30_000;
    do {
      metrics = await scrape(metricsUrl);
      if ((metrics.get('temporal_workflow_completed') ?? 0) >= concurrency - failures) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    } while (Date.now() < deadline);
  } finally {
    clearInterval(sampleRss);
    clearInterval(sampleHeap);
    await worker.kill('SIGTERM');
    await client.close();
    await fake.close();
    await dev.stop();
  }
  const seconds = (Date.now() - started) / 1000;
  const count = (name: string) => String(Math.round(metrics.get(name) ?? 0));
  return [
    server,
    settings,
    String(concurrency),
    String(concurrency - failures),
    (concurrency / seconds).toFixed(2),
    percentile(overheads, 0.5).toFixed(0),
    percentile(overheads, 0.95).toFixed(0),
    peakRss.toFixed(0),
    (peakHeap / 2 ** 20).toFixed(0),
    count('temporal_sticky_cache_hit'),
    count('temporal_sticky_cache_miss'),
    count('temporal_sticky_cache_total_forced_eviction'),
    `${count('patchloop_llm_requests:query')} / ${count('patchloop_llm_requests:predicted')}`,
  ];
}

async function main() {
  const rows: string[][] = [];
  for (const concurrency of LEVELS)
    for (const server of SERVERS)
      for (const settings of SETTINGS) rows.push(await level(concurrency, server, settings));
  console.log(
    `Concurrent agentRuns on one worker process (${ITERATIONS} tool iterations each, ${MODEL_MS} ms per model call); recommended settings: ${RECOMMENDED_ARGS.join(' ')}:\n`,
  );
  console.log(
    table(
      [
        'dev server',
        'worker settings',
        'concurrent runs',
        'completed',
        'runs/s',
        'ms above the model per call p50',
        'p95',
        'worker peak RSS MB',
        'peak heap MB',
        'cache hits',
        'cache misses',
        'evictions',
        'requests by query / predicted',
      ],
      rows,
    ),
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
