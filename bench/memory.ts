/**
 * `npm run bench:memory`: what a cached run holds. Runs of 4 small tool iterations are left waiting, so
 * every run stays in the worker's cache, in one of two places:
 * - in their 5th model call (the fake model never answers it): workflow state plus the activity in
 *   flight (its HTTP request, the request text the LLM activity holds);
 * - for a decision on a gated 5th call (`careful-assistant`): workflow state only, no activity.
 * The worker runs workflows on its main thread (`debugMode`, the same reusable V8 context as the worker
 * threads), so the heap after a full GC, before and after another batch of runs, divided by the batch,
 * is the memory one cached run costs. `BENCH_ITERATIONS` (default 4), `BENCH_RUNS` (default 200);
 * `BENCH_SNAPSHOT=prefix` writes heap snapshots before and after each batch.
 */
import { writeHeapSnapshot } from 'node:v8';
import type { Responder } from '../src/fake-model/server';
import { callTools } from '../src/fake-model/steps';
import { carefulAssistantAgent, assistantAgent } from '../src/agents/assistant';
import { table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 4);
const BATCH = Number(process.env['BENCH_RUNS'] ?? 200);

const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  const gated = JSON.stringify(body.messages[1]).includes('gate');
  if (done >= ITERATIONS)
    return gated
      ? callTools([{ id: `call_${done}`, name: 'repeat', arguments: '{"text": "x", "times": 2}' }])
      : { kind: 'hang' };
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
    agents: [assistantAgent, carefulAssistantAgent],
    workerOptions: { debugMode: true, maxCachedWorkflows: 30 * BATCH, maxConcurrentActivityTaskExecutions: 10 * BATCH },
  });
  const rows: string[][] = [];
  const snapshot = process.env['BENCH_SNAPSHOT'];
  try {
    let requests = 0;
    for (const [where, agent] of [
      ['in a model call', 'assistant'],
      ['for an approval (no activity)', 'careful-assistant'],
    ] as const) {
      const startBatch = async (count: number) => {
        const runs = [];
        for (let index = 0; index < count; index += 1)
          runs.push(await world.client.start({ agent, input: `${agent === 'assistant' ? 'add' : 'gate'} ${index}` }));
        requests += count * (ITERATIONS + 1);
        await world.fake.waitForRequests(requests);
        if (agent === 'careful-assistant')
          for (const run of runs)
            while ((await run.pendingApprovals()).length === 0) await new Promise((done) => setTimeout(done, 20));
      };
      await startBatch(10);
      const before = heapAfterGc();
      if (snapshot) console.log(`heap snapshot: ${writeHeapSnapshot(`${snapshot}.${agent}.before.heapsnapshot`)}`);
      await startBatch(BATCH);
      const after = heapAfterGc();
      if (snapshot) console.log(`heap snapshot: ${writeHeapSnapshot(`${snapshot}.${agent}.after.heapsnapshot`)}`);
      const perRun = (after - before) / BATCH;
      rows.push([
        where,
        String(ITERATIONS),
        String(BATCH),
        (before / 2 ** 20).toFixed(1),
        (after / 2 ** 20).toFixed(1),
        (perRun / 1024).toFixed(0),
      ]);
    }
  } finally {
    await world.close();
  }
  console.log(
    table(
      ['runs waiting', 'iterations', 'cached runs added', 'heap before MB', 'heap after MB', 'KB per cached run'],
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
