/**
 * `npm run bench:concurrency`: C concurrent agentRuns on one worker process (the real CLI worker, so
 * its memory is the worker's alone), each 5 tool iterations against a fake model that takes 300 ms per
 * call, on the stock dev server and on the embedded default's. For each C (BENCH_CONCURRENCY, default
 * 100,500,1000; BENCH_SERVERS, default stock,embedded): runs per second, failures, the overhead per
 * model call above the model's 300 ms (p50/p95), and the worker's peak RSS, measured side by side.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment } from '../src/config/environment';
import { FakeModelServer, type Responder } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { spawnWorker } from '../test/support/worker-process';
import { percentile, table } from './report';

const LEVELS = (process.env['BENCH_CONCURRENCY'] ?? '100,500,1000').split(',').map(Number);
/** Which dev servers (BENCH_SERVERS: `stock`, `embedded` or both, the default). */
const SERVERS = (process.env['BENCH_SERVERS'] ?? 'stock,embedded').split(',').map((name) => name === 'stock');
const ITERATIONS = 5;
const MODEL_MS = 300;

const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= ITERATIONS) return reply('done', { firstChunkDelayMs: MODEL_MS });
  return callTools([{ id: `call_${done}`, name: 'add', arguments: `{"a": ${done}, "b": 1}` }], {
    firstChunkDelayMs: MODEL_MS,
  });
};

/** Resident memory of a process, from /proc (MB). */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

async function level(concurrency: number, stock: boolean): Promise<string[]> {
  const server = await startDevServer({
    port: await freePort(),
    dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-bench-concurrency-')), 'temporal.db'),
    stock,
  });
  const fake = await FakeModelServer.start({ responder, keepBodies: false });
  const taskQueue = `concurrency-${concurrency}`;
  const worker = await spawnWorker({
    address: server.address,
    taskQueue,
    modelUrl: fake.url,
    agents: [{ name: 'assistant', instructions: 'Add.', tools: ['add'] }],
  });
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), {
    ...configFromEnvironment({}),
    taskQueue,
  });
  let peakRss = rssMb(worker.child.pid!);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(worker.child.pid!))), 250);
  const started = Date.now();
  const overheads: number[] = [];
  let failures = 0;
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
  } finally {
    clearInterval(sampler);
    await worker.kill('SIGTERM');
    await client.close();
    await fake.close();
    await server.stop();
  }
  const seconds = (Date.now() - started) / 1000;
  return [
    stock ? 'stock' : 'embedded',
    String(concurrency),
    String(concurrency - failures),
    String(failures),
    (concurrency / seconds).toFixed(2),
    percentile(overheads, 0.5).toFixed(0),
    percentile(overheads, 0.95).toFixed(0),
    peakRss.toFixed(0),
  ];
}

async function main() {
  const rows: string[][] = [];
  for (const concurrency of LEVELS) for (const stock of SERVERS) rows.push(await level(concurrency, stock));
  console.log(
    `Concurrent agentRuns on one worker process (${ITERATIONS} tool iterations each, ${MODEL_MS} ms per model call), on the stock dev server and the embedded default's:\n`,
  );
  console.log(
    table(
      [
        'dev server',
        'concurrent runs',
        'completed',
        'failed',
        'runs/s',
        'ms above the model per call p50',
        'p95',
        'worker peak RSS MB',
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
