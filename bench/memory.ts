/**
 * `npm run bench:memory`: what a cached run holds. Runs of 4 small tool iterations are left waiting in
 * their 5th model call (the fake model never answers it), so every run stays in the worker's cache; the
 * worker runs workflows on its main thread (`debugMode`, the same reusable V8 context as the worker
 * threads), so the heap after a full GC, before and after another batch of runs, divided by the
 * batch, is the memory one cached run costs (workflow state, SDK state, and the activity in flight).
 */
import { writeHeapSnapshot } from 'node:v8';
import type { Responder } from '../src/fake-model/server';
import { callTools } from '../src/fake-model/steps';
import { table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = 4;
const BATCH = Number(process.env['BENCH_RUNS'] ?? 200);

const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= ITERATIONS) return { kind: 'hang' };
  return callTools([{ id: `call_${done}`, name: 'add', arguments: `{"a": ${done}, "b": 1}` }]);
};

function heapAfterGc(): number {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i += 1) collect();
  return process.memoryUsage().heapUsed;
}

async function main() {
  const world = await startBenchWorld(responder, {
    keepBodies: false,
    workerOptions: { debugMode: true, maxCachedWorkflows: 10 * BATCH, maxConcurrentActivityTaskExecutions: 10 * BATCH },
  });
  const rows: string[][] = [];
  try {
    let started = 0;
    const startBatch = async (count: number) => {
      for (let index = 0; index < count; index += 1)
        await world.client.start({ agent: 'assistant', input: `add ${started + index}` });
      started += count;
      await world.fake.waitForRequests(started * (ITERATIONS + 1));
    };
    await startBatch(10);
    const before = heapAfterGc();
    await startBatch(BATCH);
    const after = heapAfterGc();
    const perRun = (after - before) / BATCH;
    rows.push([String(BATCH), (before / 2 ** 20).toFixed(1), (after / 2 ** 20).toFixed(1), (perRun / 1024).toFixed(0)]);
    if (process.env['BENCH_SNAPSHOT'])
      console.log(`heap snapshot: ${writeHeapSnapshot(process.env['BENCH_SNAPSHOT'])}`);
  } finally {
    await world.close();
  }
  console.log(table(['cached runs added', 'heap before MB', 'heap after MB', 'KB per cached run'], rows));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
