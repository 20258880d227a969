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
 * - `patchloop-local` (only when BENCH_SYSTEMS names it): patchloop with its model calls as local
 *   activities (the agent's `llm_local_activity` opt-in).
 *
 * For each system and N (BENCH_ITERATIONS, default 5,20,40,80): history bytes and events (read from
 * Temporal), billable actions counted from the history (the total, per iteration, and by kind: `act`
 * activities, `la` workflow tasks with local activities, `sa` search-attribute upserts, `hb`
 * heartbeats estimated; each run's start is in the total), marginal history bytes per iteration, wall
 * ms per iteration (first to last model call, median and min-max of BENCH_RUNS, default 3), on the
 * servers BENCH_SERVERS names (default `stock,embedded`). Every run is checked: the model saw N+1
 * calls and the last carried N tool results of 4 KB.
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
import { assistantAgent } from '../src/agents/assistant';
import { chainEvents, countBillableActions, type BillableActions } from '../src/client/billable-actions';
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
  /** Billable Temporal Cloud actions of the chain (docs/runs.md#billable-actions). */
  actions?: BillableActions;
}

/** How many tool results the current run must reach before the model answers. */
let target = 0;
const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= target) return reply('done');
  return callTools([{ id: `call_${done}`, name: 'repeat', arguments: '{"text": "abcdefghijklmnop", "times": 256}' }]);
};

/**
 * Bytes and events of a workflow's history as Temporal stores it (protobuf-encoded events), and its
 * billable actions counted as for patchloop's own runs (`show`), over its whole chain of runs.
 */
async function history(
  client: PatchloopClient,
  workflowId: string,
): Promise<{ bytes: number; events: number; runs: number; actions: BillableActions }> {
  let bytes = 0;
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  for await (const event of chainEvents(
    client.temporal.workflowService,
    client.temporal.options.namespace,
    workflowId,
  )) {
    bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    events.push(event);
  }
  const runs = events.filter((event) => event.workflowExecutionStartedEventAttributes).length;
  return { bytes, events: events.length, runs, actions: countBillableActions(events) };
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
  // `patchloop-local`: the same agent with its model calls as local activities (`llm_local_activity`).
  const agents = [assistantAgent, { ...assistantAgent, name: 'assistant_local', limits: { llm_local_activity: true } }];
  const { server, fake, client, close } = await startBenchWorld(responder, { stock, agents });
  const measured: Measured[] = [];
  try {
    for (const iterations of ITERATIONS)
      for (const system of SYSTEMS)
        for (let run = 0; run < RUNS; run += 1) {
          target = iterations;
          const before = fake.requests.length;
          let started: { workflowId: string };
          try {
            if (system === 'patchloop' || system === 'patchloop-local') {
              const agent = system === 'patchloop' ? 'assistant' : 'assistant_local';
              const handle = await client.start({ agent, input: 'repeat' });
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
            const { bytes, events, runs, actions } = await history(client, started.workflowId);
            measured.push({
              system,
              iterations,
              completed: true,
              msPerIteration: (requests.at(-1)!.receivedAt - requests[0]!.receivedAt) / iterations,
              historyBytes: bytes,
              historyEvents: events,
              runs,
              actions,
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
        first?.actions ? String(first.actions.total) : '',
        first?.actions ? (first.actions.total / iterations).toFixed(2) : '',
        first?.actions ? actionKinds(first.actions) : '',
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
        'actions',
        'actions/iteration',
        'of which',
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

/** The kinds of action a run spent most on, short: `41 act 40 la 7 sa`. */
function actionKinds(actions: BillableActions): string {
  const short: Array<[keyof BillableActions, string]> = [
    ['activities', 'act'],
    ['activity_retries', 'retry'],
    ['local_activity_tasks', 'la'],
    ['search_attribute_upserts', 'sa'],
    ['timers', 'timer'],
    ['signals', 'sig'],
    ['updates', 'upd'],
    ['heartbeats_estimated', 'hb'],
  ];
  return short
    .filter(([kind]) => actions[kind] > 0)
    .map(([kind, name]) => `${actions[kind]} ${name}`)
    .join(' ');
}

/** Which dev servers to measure on (BENCH_SERVERS, default both): `stock`, `embedded`. */
const SERVERS = (process.env['BENCH_SERVERS'] ?? 'stock,embedded').split(',');

async function main() {
  if (SERVERS.includes('stock')) report('stock temporal server start-dev', await measureServer(true));
  if (SERVERS.includes('embedded')) report('embedded default (the demo and the tests)', await measureServer(false));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
