/**
 * `npm run bench:scale`: many worker processes on a production-shaped Temporal (temporal-server on
 * PostgreSQL, support/temporal-cluster.ts). For 1, 2 and 4 `patchloop worker` processes on one task
 * queue (`--workers 1,2,4`): R concurrent runs (`--runs`, default 2,000) of 5 iterations (4 with a tool
 * call, then the answer) against a fake model that answers after 300 ms (`--model-ms`). Printed per
 * row: runs per second (from the first start to the last end), the overhead per iteration (a run's time
 * less its 5 model calls, over 5: p50 / p95), each worker's peak RSS. Then the largest count again (or
 * `--kill-workers N`; 0: no such pass), one worker killed (-9) once half of the model calls are made:
 * its runs finish on the others. Every run
 * is checked (completed; its 4 tool results, in order; its answer) and the tool's side effects are
 * counted outside the workers: none lost, no finished call run twice (but within the checkpoint window
 * of the kill, the documented case).
 */
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { Connection } from '@temporalio/client';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment } from '../src/config/environment';
import { FakeModelServer, type Responder } from '../src/fake-model/server';
import { callTools, reply, toolCall } from '../src/fake-model/steps';
import { freshCompiledCli, writeSharedBundle } from '../support/compiled';
import { repositoryRoot } from '../support/repository';
import { finishedRepeats, startSideEffectServer, type WorkerDeath } from '../support/side-effects';
import { startTemporalCluster, TEMPORAL_SERVER_VERSION, type TemporalCluster } from '../support/temporal-cluster';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';
import { cpuSeconds, rssMib } from './process-stats';
import { percentile, table } from './report';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '1,2,4' },
    'model-ms': { type: 'string', default: '300' },
    /** How many workers the kill pass runs with: the most of `--workers` unless given; 0 skips it. */
    'kill-workers': { type: 'string' },
  },
});
const RUNS = Number(flags.runs);
const WORKER_COUNTS = flags.workers.split(',').map(Number);
const MODEL_MS = Number(flags['model-ms']);
const KILL_WORKERS = flags['kill-workers'] === undefined ? Math.max(...WORKER_COUNTS) : Number(flags['kill-workers']);
const TOOL_CALLS = 4;
const ITERATIONS = TOOL_CALLS + 1;
/** Start calls sent together, every 5 ms: all the runs start within a fraction of a second. */
const STARTS_PER_STEP = 64;
/** A finished call's checkpoint may still be in its worker when it is killed (support/side-effects.ts). */
const CHECKPOINT_WINDOW_MS = 1000;
const TOOLS_MODULE = join(repositoryRoot, 'test', 'support', 'side-effect-tools.ts');

/** Run `label` settles `label-0` .. `label-3`, one per iteration, then answers; each reply after MODEL_MS. */
const responder: Responder = (body) => {
  const label = String(body.messages.find((message) => message['role'] === 'user')?.['content']);
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= TOOL_CALLS) return reply(`${label}: settled`, { firstChunkDelayMs: MODEL_MS });
  return callTools([toolCall(`c${done}`, 'settle', { label: `${label}-${done}`, seconds: 0 })], {
    firstChunkDelayMs: MODEL_MS,
  });
};

interface Row {
  workers: number;
  kill: boolean;
  completed: number;
  runsPerSecond: number;
  overhead: { p50: number; p95: number };
  peakRss: number[];
  cpu: { workers: number; server: number };
  problems: string[];
}

interface Pass {
  cluster: TemporalCluster;
  bundle: string;
  workers: number;
  kill: boolean;
  log: (line: string) => void;
}

/** `count` worker processes on one task queue, each named for the side effects it performs. */
async function startWorkers(
  { cluster, bundle, workers: count }: Pass,
  taskQueue: string,
  modelUrl: string,
  effectsUrl: string,
): Promise<WorkerProcess[]> {
  const agents = [{ name: 'settler', instructions: 'You settle.', tools: ['settle'] }];
  const workers: WorkerProcess[] = [];
  for (let index = 0; index < count; index += 1)
    workers.push(
      await spawnWorker({
        address: cluster.address,
        taskQueue,
        modelUrl,
        agents,
        args: ['--tools', TOOLS_MODULE, '--workflow-bundle', bundle],
        env: { PATCHLOOP_TEST_EFFECTS_URL: effectsUrl, PATCHLOOP_TEST_WORKER_NAME: `w${index}` },
      }),
    );
  return workers;
}

/** Every run started at once (64 start calls every 5 ms), each checked when it ends. */
async function runAll(client: PatchloopClient, taskQueue: string) {
  const overheads: number[] = [];
  const problems: string[] = [];
  let completed = 0;
  const runOne = async (index: number) => {
    const label = `${taskQueue}-run${index}`;
    const runStarted = Date.now();
    try {
      const run = await client.start({ agent: 'settler', input: label });
      const result = await run.result();
      const results = result.transcript.filter((message) => message.role === 'tool').map((message) => message.content);
      const expected = Array.from({ length: TOOL_CALLS }, (_, call) => JSON.stringify(`settled ${label}-${call}`));
      if (result.status !== 'completed') problems.push(`${label}: ${result.status}`);
      else if (JSON.stringify(results) !== JSON.stringify(expected)) problems.push(`${label}: tool results ${results}`);
      else if (result.transcript.at(-1)?.content !== `${label}: settled`) problems.push(`${label}: no answer`);
      else completed += 1;
      overheads.push((Date.now() - runStarted - ITERATIONS * MODEL_MS) / ITERATIONS);
    } catch (error) {
      const cause = (error as Error).cause as { code?: number; details?: string } | undefined;
      problems.push(`${label}: ${(error as Error).message}${cause ? ` (${cause.code}: ${cause.details})` : ''}`);
    }
  };
  const running: Array<Promise<void>> = [];
  for (let index = 0; index < RUNS; index += 1) {
    running.push(runOne(index));
    if (index % STARTS_PER_STEP === STARTS_PER_STEP - 1) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(running);
  return { overheads, problems, completed };
}

/** Worker `w1` killed (-9) once half of the model calls are made (given up after 10 minutes). */
async function killHalfWay(fake: FakeModelServer, worker: WorkerProcess, log: (line: string) => void) {
  const half = Math.floor((RUNS * ITERATIONS) / 2);
  const reached = await Promise.race([
    fake.waitForRequests(half).then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), 600_000).unref()),
  ]);
  if (!reached) throw new Error(`the model never got ${half} requests: no kill`);
  const death: WorkerDeath = { worker: 'w1', at: Date.now() };
  log(`killing w1 at ${fake.requests.length} model requests`);
  await worker.kill('SIGKILL');
  death.exited = Date.now();
  return death;
}

async function pass(settings: Pass): Promise<Row> {
  const { cluster, workers: workerCount, kill, log } = settings;
  const taskQueue = `scale-${workerCount}${kill ? '-kill' : ''}-${Date.now()}`;
  const effects = await startSideEffectServer();
  const fake = await FakeModelServer.start({ responder, keepBodies: false });
  const workers: WorkerProcess[] = [];
  const client = PatchloopClient.on(await Connection.connect({ address: cluster.address }), {
    ...configFromEnvironment({}),
    taskQueue,
  });
  const peakRss: number[] = [];
  const sampler = setInterval(() => {
    for (const [index, worker] of workers.entries())
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        peakRss[index] = Math.max(peakRss[index] ?? 0, rssMib(worker.child.pid!));
  }, 250);
  try {
    workers.push(...(await startWorkers(settings, taskQueue, fake.url, effects.url)));
    const serverPid = cluster.serverPid()!;
    const serverCpu = cpuSeconds(serverPid);
    const killed = kill ? killHalfWay(fake, workers[1]!, log) : Promise.resolve(undefined);
    const started = Date.now();
    const { overheads, problems, completed } = await runAll(client, taskQueue);
    const seconds = (Date.now() - started) / 1000;
    const death = await killed;
    const alive = workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null);
    const ends = effects.effects.filter((effect) => effect.phase === 'end');
    const settled = new Set(ends.map((effect) => effect.label)).size;
    if (settled !== RUNS * TOOL_CALLS) problems.push(`${settled} of ${RUNS * TOOL_CALLS} calls settled`);
    const repeats = finishedRepeats(effects.effects, death ? [death] : [], CHECKPOINT_WINDOW_MS);
    if (repeats.outside > 0) problems.push(`${repeats.outside} finished calls ran again`);
    if (repeats.inWindow > 0) problems.push(`(${repeats.inWindow} in the kill's checkpoint window)`);
    return {
      workers: workerCount,
      kill,
      completed,
      runsPerSecond: RUNS / seconds,
      overhead: { p50: percentile(overheads, 0.5), p95: percentile(overheads, 0.95) },
      peakRss,
      cpu: {
        workers: alive.reduce((total, worker) => total + cpuSeconds(worker.child.pid!), 0),
        server: cpuSeconds(serverPid) - serverCpu,
      },
      problems,
    };
  } finally {
    clearInterval(sampler);
    for (const worker of workers) await worker.kill('SIGTERM');
    await client.close();
    await fake.close();
    await effects.close();
  }
}

async function main() {
  const log = (line: string) => console.error(`bench:scale: ${line}`);
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-bench-scale-'));
  const bundle = join(folder, 'workflows.bundle.js');
  process.env['PATCHLOOP_TEST_CLI'] = await freshCompiledCli();
  await writeSharedBundle(process.env['PATCHLOOP_TEST_CLI'], bundle);
  const cluster = await startTemporalCluster({ folder });
  const rows: Row[] = [];
  try {
    for (const count of WORKER_COUNTS) {
      log(`${count} worker(s), ${RUNS} runs`);
      rows.push(await pass({ cluster, bundle, workers: count, kill: false, log }));
      log(JSON.stringify(rows.at(-1)));
    }
    if (KILL_WORKERS >= 2) {
      log(`${KILL_WORKERS} workers, ${RUNS} runs, one killed mid-way`);
      rows.push(await pass({ cluster, bundle, workers: KILL_WORKERS, kill: true, log }));
      log(JSON.stringify(rows.at(-1)));
    }
  } finally {
    await cluster.stop();
  }
  console.log(
    `${RUNS} concurrent runs of ${ITERATIONS} iterations (${TOOL_CALLS} tool calls, then the answer), a ${MODEL_MS} ms model, on temporal-server ${TEMPORAL_SERVER_VERSION} and PostgreSQL:\n`,
  );
  console.log(
    table(
      [
        'workers',
        'kill -9 of one',
        'completed',
        'runs/s',
        'overhead per iteration ms p50',
        'p95',
        'peak RSS MiB per worker',
        'CPU s workers',
        'temporal-server',
        'problems',
      ],
      rows.map((row) => [
        String(row.workers),
        row.kill ? 'yes' : 'no',
        `${row.completed}/${RUNS}`,
        row.runsPerSecond.toFixed(1),
        row.overhead.p50.toFixed(0),
        row.overhead.p95.toFixed(0),
        row.peakRss.map((rss) => rss.toFixed(0)).join(' / '),
        row.cpu.workers.toFixed(0),
        row.cpu.server.toFixed(0),
        row.problems.length === 0 ? 'none' : row.problems.slice(0, 3).join('; '),
      ]),
    ),
  );
  if (rows.some((row) => row.completed !== RUNS || row.problems.some((problem) => !problem.startsWith('('))))
    process.exitCode = 1;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
