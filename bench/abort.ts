/**
 * `npm run bench:abort`: how long an abort takes to close a run, in each phase it can land in (a model
 * call streaming, a tool batch running, a wait for an approval), with a worker up. Measured from the
 * run's own history: the abort signal's event to the close event. Side by side in one run: the default
 * worker, and the same worker without the abort nudge (`src/activities/abort-nudges.ts`: the phase learns
 * of the cancel at its next timed heartbeat only). Each phase's aborts land spread over a second after it
 * started, so the timed heartbeat's phase is sampled evenly.
 */
import { z } from 'zod';
import type { RunHandle } from '../src/client/patchloop-client';
import type { Responder } from '../src/fake-model/server';
import { callTools } from '../src/fake-model/steps';
import { defineTool } from '../src/tools/define-tool';
import { abortSignalToClose } from '../support/abort-timing';
import { median, percentile, table } from './report';
import { startBenchWorld, type BenchWorld } from './world';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 12);
type Phase = 'model call' | 'tool batch' | 'approval wait';
const PHASES: Phase[] = ['model call', 'tool batch', 'approval wait'];

/** What the model does for each phase's prompt: stream forever, call the waiting tool, call the gated one. */
const responder: Responder = (body) => {
  const first = body.messages.find((message) => message['role'] === 'user');
  const prompt = typeof first?.['content'] === 'string' ? first['content'] : '';
  if (prompt.startsWith('tool')) return callTools([{ id: 'call_wait', name: 'wait', arguments: '{}' }]);
  if (prompt.startsWith('approval')) return callTools([{ id: 'call_gated', name: 'gated', arguments: '{}' }]);
  return { kind: 'hang', chunks: ['Once ', 'upon ', 'a time'], chunkDelayMs: 20 };
};

let toolStarted: () => void = () => undefined;
const waitTool = defineTool({
  name: 'wait',
  description: 'waits until aborted',
  parameters: z.object({}),
  execute: (_input, { signal }) =>
    new Promise((_resolve, reject) => {
      toolStarted();
      signal.addEventListener('abort', () => reject(new Error('stopped')));
    }),
});
const gatedTool = defineTool({
  name: 'gated',
  description: 'needs an approval',
  parameters: z.object({}),
  execute: () => 'done',
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Starts a run that reaches `phase`, and resolves once it is there. */
async function reach(world: BenchWorld, phase: Phase, index: number): Promise<RunHandle> {
  const before = world.fake.requests.length;
  const started = new Promise<void>((resolve) => (toolStarted = resolve));
  const prompt = phase === 'model call' ? 'stream' : phase === 'tool batch' ? 'tool' : 'approval';
  const run = await world.client.start({ agent: 'bench', input: `${prompt} ${index}` });
  if (phase === 'model call') await until(async () => world.fake.requests.length > before, 'the model call');
  else if (phase === 'tool batch') await started;
  else await until(async () => (await run.pendingApprovals()).length > 0, 'the approval');
  return run;
}

/** The abort signal's event to the close event, in the run's history (ms). */
async function closedAfterAbort(run: RunHandle): Promise<number> {
  const history = await run.workflow.fetchHistory();
  return abortSignalToClose(history.events ?? []) ?? Number.NaN;
}

async function measure(nudge: boolean): Promise<Map<Phase, number[]>> {
  const world = await startBenchWorld(responder, {
    agents: [{ name: 'bench', instructions: 'bench', tools: ['wait', 'gated'], needs_approval: ['gated'] }],
    tools: [waitTool, gatedTool],
    keepBodies: false,
    // Without the nudge: the sink does nothing, as on a worker that never heard the abort.
    ...(nudge
      ? {}
      : {
          workerOptions: {
            sinks: { patchloop: { runEnded: { fn: () => undefined }, abortRequested: { fn: () => undefined } } },
          },
        }),
  });
  const found = new Map<Phase, number[]>();
  try {
    for (const phase of PHASES) {
      const times: number[] = [];
      for (let index = 0; index < RUNS; index += 1) {
        const run = await reach(world, phase, index);
        // Spread over the second after the phase started (the timed heartbeat's period).
        await new Promise((resolve) => setTimeout(resolve, ((index + 0.5) / RUNS) * 1000));
        await run.abort('bench');
        const result = await run.result();
        if (result.status !== 'aborted') throw new Error(`${phase}: the run ended ${result.status}`);
        times.push(await closedAfterAbort(run));
      }
      found.set(phase, times);
    }
  } finally {
    await world.close();
  }
  return found;
}

async function main() {
  const nudged = await measure(true);
  const timed = await measure(false);
  const rows = PHASES.flatMap((phase) =>
    (
      [
        ['default (nudged)', nudged],
        ['timed heartbeat only', timed],
      ] as const
    ).map(([label, found]) => {
      const times = found.get(phase)!;
      return [
        phase,
        label,
        median(times).toFixed(0),
        percentile(times, 0.95).toFixed(0),
        Math.max(...times).toFixed(0),
      ];
    }),
  );
  console.log(`abort signal -> run closed (ms, from the run's history), ${RUNS} runs per phase, a worker up:\n`);
  console.log(table(['phase', 'worker', 'p50', 'p95', 'max'], rows));
  const all = (found: Map<Phase, number[]>) => [...found.values()].flat();
  console.log(
    `\nall phases: p50 ${median(all(nudged)).toFixed(0)} ms, p95 ${percentile(all(nudged), 0.95).toFixed(0)} ms` +
      ` (timed heartbeat only: p50 ${median(all(timed)).toFixed(0)} ms, p95 ${percentile(all(timed), 0.95).toFixed(0)} ms)`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
