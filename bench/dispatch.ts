/**
 * `npm run bench:dispatch`: wall time per ReAct iteration on the stock dev server and on the embedded
 * default's (transfer-queue poll limit lifted), side by side in one run: the same agentRun (one tool
 * returning 4 KB per iteration, a fake model answering at once), N iterations, 3 runs each.
 */
import type { Responder } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import { EMBEDDED_DYNAMIC_CONFIG } from '../src/worker/temporal-cli';
import { median, table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 30);
const RUNS = 3;

/** Calls `repeat` (4 KB) until `ITERATIONS` results are in, then answers. */
const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= ITERATIONS) return reply('done');
  return callTools([{ id: `call_${done}`, name: 'repeat', arguments: '{"text": "abcdefghijklmnop", "times": 256}' }]);
};

async function measure(stock: boolean): Promise<number[]> {
  const world = await startBenchWorld(responder, { stock, keepBodies: false });
  const perIteration: number[] = [];
  try {
    for (let run = 0; run < RUNS; run += 1) {
      const before = world.fake.requests.length;
      const handle = await world.client.start({ agent: 'assistant', input: 'repeat' });
      const result = await handle.result();
      if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
      const times = world.fake.requests.slice(before).map((request) => request.receivedAt);
      if (times.length !== ITERATIONS + 1)
        throw new Error(`the model saw ${times.length} calls, not ${ITERATIONS + 1}`);
      perIteration.push((times.at(-1)! - times[0]!) / ITERATIONS);
    }
  } finally {
    await world.close();
  }
  return perIteration;
}

async function main() {
  const stock = await measure(true);
  const embedded = await measure(false);
  const row = (label: string, values: number[]) => [
    label,
    median(values).toFixed(1),
    `${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)}`,
  ];
  console.log(`ms per iteration, ${ITERATIONS} iterations, ${RUNS} runs each (median, min-max):\n`);
  console.log(
    table(
      ['dev server', 'ms/iteration', 'min-max'],
      [
        row('stock temporal server start-dev', stock),
        row(
          `embedded default (${Object.entries(EMBEDDED_DYNAMIC_CONFIG)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')})`,
          embedded,
        ),
      ],
    ),
  );
  console.log(`\nstock / embedded: ${(median(stock) / median(embedded)).toFixed(2)}x`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
