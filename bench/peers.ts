/**
 * `npm run bench:peers`: the same scenario on patchloop, on a peer, and on the bare floor, side by side in
 * one run, on the stock dev server and on the embedded default's (transfer-queue limit lifted).
 *
 * The scenario: one tool returning 4 KB, N tool iterations then a final answer, the same fake
 * OpenAI-compatible model for every system. Peers live under `bench/peers/<name>/` with their own
 * lockfiles (their own Temporal SDK versions) and run as their own processes (worker and starter).
 * - `bare`: the floor, a bare SDK workflow calling two no-op activities per iteration (a model call
 *   that posts to the fake model, a tool returning 4 KB); not an agent.
 * - `ai-sdk`: `@temporalio/ai-sdk` (the AI SDK's generateText in the workflow, the model through the
 *   plugin's activity, the tool as an activity).
 * - `openai-agents`: the OpenAI Agents SDK with Temporal's integration (Python; Runner.run in the
 *   workflow, the model through the plugin's activity, the tool through activity_as_tool).
 * - `pydantic-ai`: Pydantic AI's TemporalAgent (Python; model and tool calls as activities).
 *
 * For each system and N (BENCH_ITERATIONS, default 5,20,40,80): history bytes and events (read from
 * Temporal), marginal history bytes per iteration, wall ms per iteration (first to last model call,
 * median and min-max of BENCH_RUNS, default 3). Every run is checked: the model saw N+1 calls and the
 * last carried N tool results of 4 KB.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import type { FakeModelServer, Responder } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import type { DevServer } from '../src/worker/temporal-cli';
import type { PatchloopClient } from '../src/client/patchloop-client';
import { median, table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = (process.env['BENCH_ITERATIONS'] ?? '5,20,40,80').split(',').map(Number);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const SYSTEMS = (process.env['BENCH_SYSTEMS'] ?? 'patchloop,ai-sdk,openai-agents,pydantic-ai,bare').split(',');
const TOOL_OUTPUT = 'abcdefghijklmnop'.repeat(256); // 4,096 characters
/** The tool's output as each system hands it to the model: as is, or JSON-encoded (patchloop). */
const TOOL_RESULTS = [TOOL_OUTPUT, JSON.stringify(TOOL_OUTPUT)];
const peersFolder = join(__dirname, 'peers');

interface Measured {
  system: string;
  iterations: number;
  completed: boolean;
  error?: string;
  msPerIteration: number;
  historyBytes: number;
  historyEvents: number;
  /** Runs in the chain (continue-as-new). */
  runs: number;
}

/** How many tool results the current run must reach before the model answers. */
let target = 0;
const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= target) return reply('done');
  return callTools([{ id: `call_${done}`, name: 'repeat', arguments: '{"text": "abcdefghijklmnop", "times": 256}' }]);
};

/**
 * Bytes and events of a workflow's history as Temporal stores it (protobuf-encoded events), over its
 * whole chain of runs: from the latest back (a run started by continue-as-new names the one before).
 */
async function history(
  client: PatchloopClient,
  workflowId: string,
): Promise<{ bytes: number; events: number; runs: number }> {
  let bytes = 0;
  let events = 0;
  let runs = 0;
  let run: string | undefined;
  do {
    let previous: string | undefined;
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await client.temporal.workflowService.getWorkflowExecutionHistory({
        namespace: client.temporal.options.namespace,
        execution: { workflowId, ...(run ? { runId: run } : {}) },
        maximumPageSize: 100,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const event of page.history?.events ?? []) {
        bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
        events += 1;
        previous ||= event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
      }
      nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
    } while (nextPageToken);
    runs += 1;
    run = previous;
  } while (run);
  return { bytes, events, runs };
}

/** Runs a peer's own runner (its own process, its own SDK) and returns the workflow it ran. */
async function runPeer(system: string, server: DevServer, fake: FakeModelServer, iterations: number) {
  const folder = join(peersFolder, system);
  // Node peers have a run.mjs, Python peers a run.py and their own .venv (scripts/peers-setup.sh).
  const python = existsSync(join(folder, 'run.py'));
  const { stdout } = await promisify(execFile)(
    python ? join(folder, '.venv', 'bin', 'python') : process.execPath,
    [
      join(folder, python ? 'run.py' : 'run.mjs'),
      server.address,
      `peer-${system}-${Date.now()}`,
      String(iterations),
      fake.url,
    ],
    { timeout: 600_000, maxBuffer: 16 * 2 ** 20, cwd: folder },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { workflowId: string };
}

async function measureServer(stock: boolean): Promise<Measured[]> {
  const { server, fake, client, close } = await startBenchWorld(responder, { stock });
  const measured: Measured[] = [];
  try {
    for (const iterations of ITERATIONS)
      for (const system of SYSTEMS)
        for (let run = 0; run < RUNS; run += 1) {
          target = iterations;
          const before = fake.requests.length;
          let started: { workflowId: string };
          try {
            if (system === 'patchloop') {
              const handle = await client.start({ agent: 'assistant', input: 'repeat' });
              const result = await handle.result();
              if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
              started = { workflowId: handle.workflowId };
            } else started = await runPeer(system, server, fake, iterations);
            const requests = fake.requests.slice(before);
            if (requests.length !== iterations + 1)
              throw new Error(`the model saw ${requests.length} calls, not ${iterations + 1}`);
            const last = requests.at(-1)!.body.messages.filter((message) => message['role'] === 'tool');
            if (
              last.length !== iterations ||
              last.some((message) => !TOOL_RESULTS.includes(message['content'] as string))
            )
              throw new Error(
                `the last call carried ${last.length} tool results, not ${iterations} of 4 KB: ${JSON.stringify(last[0]?.['content']).slice(0, 80)}`,
              );
            const { bytes, events, runs } = await history(client, started.workflowId);
            measured.push({
              system,
              iterations,
              completed: true,
              msPerIteration: (requests.at(-1)!.receivedAt - requests[0]!.receivedAt) / iterations,
              historyBytes: bytes,
              historyEvents: events,
              runs,
            });
          } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            measured.push({
              system,
              iterations,
              completed: false,
              error: message.split('\n')[0]!.slice(0, 120),
              msPerIteration: NaN,
              historyBytes: NaN,
              historyEvents: NaN,
              runs: NaN,
            });
          }
        }
  } finally {
    await close();
  }
  return measured;
}

function report(title: string, measured: Measured[]): void {
  const rows: string[][] = [];
  const ours = (iterations: number) =>
    median(
      measured
        .filter((m) => m.system === 'patchloop' && m.iterations === iterations && m.completed)
        .map((m) => m.msPerIteration),
    );
  const oursBytes = (iterations: number) =>
    measured.find((m) => m.system === 'patchloop' && m.iterations === iterations && m.completed)?.historyBytes ?? NaN;
  for (const iterations of ITERATIONS)
    for (const system of SYSTEMS) {
      const runs = measured.filter((m) => m.system === system && m.iterations === iterations);
      const done = runs.filter((m) => m.completed);
      const times = done.map((m) => m.msPerIteration);
      const first = done[0];
      const smallest = measured.find((m) => m.system === system && m.iterations === ITERATIONS[0] && m.completed);
      const marginal =
        first && smallest && iterations !== smallest.iterations
          ? ((first.historyBytes - smallest.historyBytes) / (iterations - smallest.iterations)).toFixed(0)
          : '';
      rows.push([
        system,
        String(iterations),
        `${done.length}/${runs.length}${runs.find((m) => m.error)?.error ? ` (${runs.find((m) => m.error)!.error})` : ''}`,
        first ? String(first.historyBytes) : '',
        first ? String(first.historyEvents) : '',
        first ? String(first.runs) : '',
        marginal,
        times.length ? median(times).toFixed(1) : '',
        times.length ? `${Math.min(...times).toFixed(1)}-${Math.max(...times).toFixed(1)}` : '',
        times.length ? (median(times) / ours(iterations)).toFixed(2) : '',
        first ? (first.historyBytes / oursBytes(iterations)).toFixed(2) : '',
      ]);
    }
  console.log(`\n${title}\n`);
  console.log(
    table(
      [
        'system',
        'N',
        'completed',
        'history bytes',
        'events',
        'runs',
        'marginal bytes/iteration',
        'ms/iteration (median)',
        'min-max',
        'time / patchloop',
        'history / patchloop',
      ],
      rows,
    ),
  );
}

async function main() {
  report('stock temporal server start-dev', await measureServer(true));
  report('embedded default (the demo and the tests)', await measureServer(false));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
