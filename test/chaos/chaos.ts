import {
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { interruptedMcpMessage } from '../../src/activities/tool-batch';
import { PatchloopClient, type RunHandle } from '../../src/client/patchloop-client';
import {
  toolCancelledContent,
  toolStepErrorContent,
  truncatedAssistantContent,
  validateToolLinkage,
  type Message,
} from '../../src/context';
import { FakeModelServer, type ChatRequestBody } from '../../src/fake-model/server';
import {
  callTools,
  failWith,
  reply,
  type FakeStep,
  type FakeToolCall,
  type ReplyFault,
} from '../../src/fake-model/steps';
import type { AgentRunResult } from '../../src/runtime';
import { configFromEnvironment } from '../../src/config/environment';
import { freePort } from '../../src/worker/free-port';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';
import { repositoryRoot } from '../support/reference';
import { commandLine, isRunning, processTree } from '../support/process-tree';
import { pythonMcpServer } from '../support/mcp-servers';
import {
  finishedRepeats,
  restartedCalls,
  startSideEffectServer,
  type ServerOutage,
  type SideEffect,
  type WorkerDeath,
} from '../support/side-effects';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';

/**
 * A seeded chaos run against real parts: a Temporal dev server (restarted once on its SQLite file), two
 * `patchloop worker` processes (killed with SIGKILL or SIGTERM and restarted), and the fake model
 * breaking replies the way providers and networks do. Runs get user messages and aborts at random.
 * Every run is then checked against what the fake model really sent and what was really accepted.
 */
export interface ChaosOptions {
  runs: number;
  seed: number;
  /** Runs in flight at once. */
  concurrency?: number;
  serverRestart?: boolean;
  log?: (line: string) => void;
}

export type ProviderFaultKind =
  | 'rate_limit'
  | 'server_error'
  | 'reset_mid_stream'
  | 'eof_no_finish'
  | 'eof_no_done'
  | 'junk_line'
  | 'slow_first_byte';

export interface RunCheck {
  index: number;
  workflowId: string;
  settled: boolean;
  status: string;
  valid: boolean;
  lost: number;
  duplicated: number;
  stuck: boolean;
  workflowTaskFailures: number;
  abortToCloseMs: number | null;
  abortWithWorkerUp: boolean;
  /** The run's MCP calls (see McpCounts); their problems are in `problems`. */
  mcp: McpCounts;
  problems: string[];
}

/** MCP calls of a run's transcript, checked against the executions the Python server reported. */
export interface McpCounts {
  /** Calls of `shop_pay` (not idempotent) and `shop_quote` (read-only) in the transcript. */
  pay: number;
  quote: number;
  /** `shop_pay` calls the server executed (reported their start). */
  executed: number;
  /** `shop_pay` calls whose result is the interrupted-call error (a batch retry found them unfinished). */
  interrupted: number;
  /** `shop_pay` calls the server executed more than once: must be 0. */
  duplicates: number;
  /** `shop_quote` calls sent again after a crash (allowed: the server marks the tool readOnlyHint). */
  resent: number;
}

export interface ChaosReport {
  runs: RunCheck[];
  providerFaults: Record<ProviderFaultKind, number>;
  workerKills: number;
  workerTerms: number;
  serverRestarts: number;
  /** User messages the runs accepted (update) or received (signal). */
  messagesAccepted: number;
  aborts: number;
  /**
   * Calls of the side-effect tool, counted by a server outside the workers: how many, how many finished
   * more than once (must be 0: finished calls are checkpointed), how many finished more than once for
   * one of the documented reasons (their worker was killed within CHECKPOINT_WINDOW_MS of their end;
   * they finished while the dev server was down, so their checkpoint was never recorded and the server
   * timed the attempt out), and how many started more than once (calls in flight at a kill may).
   */
  sideEffects: { calls: number; finished: number; finishedInWindow: number; finishedInOutage: number; started: number };
  /**
   * MCP calls summed over the runs; how many worker stops landed in the middle of a `pay` call (every
   * third SIGKILL and SIGTERM waits for one); the Python server processes the workers started: how many,
   * and how many still ran after every worker had stopped (must be 0: a stdio server exits with its
   * worker).
   */
  mcp: McpCounts & { workerStopsMidCall: number; serverProcesses: number; serverProcessesLeft: number };
  durationMs: number;
  table: string;
}

const FAULT_KINDS: ProviderFaultKind[] = [
  'rate_limit',
  'server_error',
  'reset_mid_stream',
  'eof_no_finish',
  'eof_no_done',
  'junk_line',
  'slow_first_byte',
];
const RUN_DEADLINE_MS = 240_000;
/**
 * A finished call's checkpoint leaves the worker within its heartbeat throttle (0.25 s); with the
 * heartbeat RPC on two busy cores, a kill up to 1 s after a call's end may still beat it.
 */
const CHECKPOINT_WINDOW_MS = 1000;
/** A `pay` call that began less than this ago is still running (it takes at least 0.2 s). */
const MID_CALL_MS = 150;
/** How long a worker fault meant to land during an MCP call waits for one before it lands anyway. */
const MID_CALL_WAIT_MS = 15_000;
/** Short, so a killed worker's calls move on quickly; a server outage longer than this times attempts out. */
const HEARTBEAT_TIMEOUT_SECONDS = 2;

/** mulberry32: a small, seedable generator, so a failing seed can be run again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface RunPlan {
  steps: FakeToolCall[][];
}

/**
 * The MCP server of the chaos agent: test/support/python_mcp_server.py over stdio, started by each worker
 * (the test venv's Python). Its tools `pay` (not idempotent) and `quote` (`readOnlyHint`) report every
 * execution to the side-effect server, whose address and the worker's name reach the server through
 * `${VAR}` values of `env`, resolved on the worker.
 */
const MCP_SERVER = 'python';
const MCP_PREFIX = 'shop_';
const MCP_PAY = `${MCP_PREFIX}pay`;
const MCP_QUOTE = `${MCP_PREFIX}quote`;

/** The result a non-idempotent MCP call gets when a batch retry finds it unfinished (tool-batch.ts). */
export function interruptedMcpContent(tool: string): string {
  return toolStepErrorContent(interruptedMcpMessage(tool, MCP_SERVER));
}

/** What the model is scripted to do in a run: some tool iterations, then an answer that says what it saw. */
function planFor(index: number, next: () => number, nextMcp: () => number): RunPlan {
  const steps: FakeToolCall[][] = [];
  const iterations = 2 + Math.floor(next() * 4);
  for (let step = 0; step < iterations; step += 1) {
    const calls = 1 + Math.floor(next() * 2);
    // Some iterations also call an MCP tool, beside the others in the same batch. Drawn from a generator
    // of their own, so the rest of the plan is what it was before MCP calls were added.
    const mcp: FakeToolCall[] =
      nextMcp() < 0.5
        ? [
            {
              id: `call_${step}_${calls}`,
              name: nextMcp() < 0.7 ? MCP_PAY : MCP_QUOTE,
              // The label names the call across the whole chaos run: the server records it with each execution.
              arguments: JSON.stringify({
                label: `run${index}-${step}-${calls}`,
                seconds: Math.round((0.2 + nextMcp()) * 10) / 10,
              }),
            },
          ]
        : [];
    steps.push([
      ...Array.from({ length: calls }, (_, call) =>
        // Some calls take a while, so that kills and aborts also land in the middle of tool batches.
        next() < 0.3
          ? {
              id: `call_${step}_${call}`,
              name: 'wait',
              arguments: JSON.stringify({ seconds: Math.round((0.3 + next()) * 10) / 10 }),
            }
          : next() < 0.4
            ? {
                // A side effect outside the worker: counted, so a finished call that ran again shows.
                id: `call_${step}_${call}`,
                name: 'charge',
                arguments: JSON.stringify({
                  label: `run${index}-${step}-${call}`,
                  seconds: Math.round(next() * 8) / 10,
                }),
              }
            : {
                id: `call_${step}_${call}`,
                name: 'add',
                arguments: JSON.stringify({ a: Math.floor(next() * 1000), b: Math.floor(next() * 1000) + index }),
              },
      ),
      ...mcp,
    ]);
  }
  return { steps };
}

function finalText(index: number, messages: ChatRequestBody['messages']): string[] {
  const users = messages.filter((message) => message['role'] === 'user').length;
  return [`Run ${index} is done `, `after ${users} user `, `message(s); `, `all sums `, `checked.`];
}

/** A tool call the model was scripted to send (ids repeat across runs, not within one). */
interface SentCall {
  name: string;
  arguments: string;
}

/** The model's side: a deterministic reply per request state, broken at random like a real provider. */
class ChaosModel {
  readonly faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<ProviderFaultKind, number>;
  /** Per run: every complete answer text and tool call the model was scripted to send. */
  readonly sentTexts = new Map<number, Set<string>>();
  readonly sentCalls = new Map<number, Map<string, SentCall>>();
  private readonly plans = new Map<number, RunPlan>();
  private readonly faultRandom = new Map<number, () => number>();
  private readonly consecutiveFaults = new Map<number, number>();
  private readonly waiters: Array<{ count: number; wake: () => void }> = [];
  requestCount = 0;

  constructor(private readonly seed: number) {}

  /** Resolves once the model has received `count` requests (or `stop()` says to give up). */
  async requestsReached(count: number, stop: () => boolean): Promise<void> {
    while (this.requestCount < count && !stop()) {
      await new Promise<void>((wake) => {
        this.waiters.push({ count, wake });
        setTimeout(wake, 1000);
      });
    }
  }

  plan(index: number): RunPlan {
    let plan = this.plans.get(index);
    if (!plan) {
      plan = planFor(index, random(this.seed * 7919 + index), random(this.seed * 15485863 + index));
      this.plans.set(index, plan);
    }
    return plan;
  }

  respond = (body: ChatRequestBody): FakeStep => {
    this.requestCount += 1;
    for (const waiter of this.waiters.splice(0)) waiter.wake();
    const first = body.messages.find((message) => message['role'] === 'user');
    const index = Number(/chaos run (\d+)/.exec(String(first?.['content'] ?? ''))?.[1] ?? -1);
    if (index < 0) return failWith(400, { message: 'not a chaos run' });
    const plan = this.plan(index);
    const done = body.messages.filter(
      (message) => message['role'] === 'assistant' && Array.isArray(message['tool_calls']),
    ).length;
    const intended: FakeStep =
      done < plan.steps.length && body.tools
        ? callTools(plan.steps[done]!, { chunkDelayMs: 60 })
        : reply(finalText(index, body.messages), { chunkDelayMs: 120 });
    if (intended.kind === 'reply') {
      const texts = this.sentTexts.get(index) ?? new Set();
      if (intended.toolCalls) {
        const calls = this.sentCalls.get(index) ?? new Map<string, SentCall>();
        for (const call of intended.toolCalls) calls.set(call.id, { name: call.name, arguments: call.arguments });
        this.sentCalls.set(index, calls);
      } else texts.add((intended.content as string[]).join(''));
      this.sentTexts.set(index, texts);
    }
    return this.broken(index, intended);
  };

  private broken(index: number, step: FakeStep): FakeStep {
    let next = this.faultRandom.get(index);
    if (!next) {
      next = random(this.seed * 104729 + index);
      this.faultRandom.set(index, next);
    }
    // At most three faults in a row, so every run makes progress.
    const streak = this.consecutiveFaults.get(index) ?? 0;
    if (streak >= 3 || next() > 0.4 || step.kind !== 'reply') {
      this.consecutiveFaults.set(index, 0);
      return step;
    }
    const kind = FAULT_KINDS[Math.floor(next() * FAULT_KINDS.length)]!;
    this.faults[kind] += 1;
    this.consecutiveFaults.set(index, kind === 'slow_first_byte' ? 0 : streak + 1);
    const faulty = (fault: ReplyFault): FakeStep => ({ ...step, fault });
    switch (kind) {
      case 'rate_limit':
        return failWith(429, { message: 'rate limited', headers: { 'retry-after-ms': '200' } });
      case 'server_error':
        return failWith(500, { message: 'upstream error' });
      case 'reset_mid_stream':
        return faulty({ kind: 'reset', afterChunks: Math.floor(next() * 4) });
      case 'eof_no_finish':
        return faulty({ kind: 'eof', omit: 'finish_reason' });
      case 'eof_no_done':
        return faulty({ kind: 'eof', omit: 'done' });
      case 'junk_line':
        return faulty({ kind: 'junk', afterChunks: Math.floor(next() * 3) });
      case 'slow_first_byte':
        return { ...step, firstChunkDelayMs: 1000 + Math.floor(next() * 1500) };
    }
  }
}

interface SentMessage {
  content: string;
  /**
   * `accepted`: the update said so. `delivered`: the signal reached the server, so the run either took it
   * or logged an `input_rejected` event. `unknown`: the update's call failed without an answer (the
   * server restarting, the run closing): it may have been taken at most once.
   */
  fate: 'accepted' | 'delivered' | 'unknown';
}

interface RunRecord {
  index: number;
  handle: RunHandle;
  messages: SentMessage[];
  abortSentAt: number | null;
  /** Whether some worker was up when the abort was sent (with none, the abort waits for a restart). */
  abortWithWorkerUp: boolean;
  closedAt: number | null;
  result: AgentRunResult | null;
  /** The run failed (settled, but not as a run should under retryable faults). */
  failed: boolean;
  error: string | null;
}

/** Retries a client call across a server restart; the final error is rethrown after the deadline. */
async function persistently<T>(
  call: () => Promise<T>,
  deadline: number,
  isFinal: (error: unknown) => boolean = () => false,
): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (isFinal(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const log = (line: string) => options.log?.(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`);
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-chaos-'));
  const port = await freePort();
  const dbFile = join(folder, 'temporal.db');
  const serverOptions = { port, dbFile, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 400 } };
  let server: DevServer = await startDevServer(serverOptions);
  const model = new ChaosModel(options.seed);
  const fake = await FakeModelServer.start({ responder: model.respond, keepBodies: false });
  const taskQueue = `chaos-${options.seed}-${Date.now()}`;
  const agents = [
    {
      name: 'chaos',
      instructions: 'Add the numbers you are given.',
      tools: ['add', 'wait', 'charge'],
      mcp_servers: [
        pythonMcpServer({
          tools: ['pay', 'quote'],
          tool_prefix: MCP_PREFIX,
          env: { PY_MCP_EFFECTS_URL: '${PATCHLOOP_TEST_EFFECTS_URL}', PY_MCP_WORKER: '${PATCHLOOP_TEST_WORKER_NAME}' },
        }),
      ],
      // A batch may be on three stopped workers in a row (14 stops in about a minute at full size; a stop
      // that waited for a worker to come up, or for an MCP call in flight, lands right after the one
      // before): more attempts than the default 3, so no batch runs out of them and every result can be
      // checked (seen in 2 of 3 full runs with 3: a batch's calls all got "activity Heartbeat timeout").
      limits: {
        heartbeat_timeout_seconds: HEARTBEAT_TIMEOUT_SECONDS,
        abort_wait_seconds: 5,
        tool_batch_max_attempts: 5,
      },
    },
  ];
  const sideEffects = await startSideEffectServer();
  // Each worker process has its own name, so a side effect is tied to the process that performed it.
  let spawned = 0;
  const deaths: WorkerDeath[] = [];
  const workerNames = new Map<WorkerProcess, string>();
  const spawn = async () => {
    const name = `chaos-worker-${(spawned += 1)}`;
    const spawnedWorker = await spawnWorker({
      address: server.address,
      taskQueue,
      modelUrl: fake.url,
      agents,
      args: ['--tools', join(repositoryRoot, 'test', 'support', 'side-effect-tools.ts')],
      env: { PATCHLOOP_TEST_EFFECTS_URL: sideEffects.url, PATCHLOOP_TEST_WORKER_NAME: name },
    });
    workerNames.set(spawnedWorker, name);
    return spawnedWorker;
  };
  const workers: Array<WorkerProcess | null> = [await spawn(), await spawn()];
  const connection = await Connection.connect({ address: server.address });
  const client = PatchloopClient.on(connection, { ...configFromEnvironment({}), taskQueue });
  const chaosRandom = random(options.seed);
  const counts = { kills: 0, terms: 0, restarts: 0, aborts: 0, midMcpCall: 0 };
  let finished = false;
  let serverDown = false;
  const outages: ServerOutage[] = [];
  // The MCP server processes of each worker, read just before it is stopped.
  const mcpProcesses: number[] = [];

  // Infrastructure faults are tied to progress, not to the clock, so they land while runs are in
  // flight whatever the machine's speed: each fires once the model has received a given number of
  // requests, spread over the first 70% of the fewest requests the runs can make.
  const minimumRequests = Array.from({ length: options.runs }, (_, index) => model.plan(index).steps.length + 1).reduce(
    (a, b) => a + b,
    0,
  );
  // Every third SIGKILL and SIGTERM (the first of each, ...) waits for a call of the non-idempotent MCP
  // tool in flight and stops the worker whose server runs it (see midMcpCall).
  const plannedFaults: Array<{ at: number; kind: 'SIGKILL' | 'SIGTERM' | 'restart'; midMcpCall?: boolean }> = [
    ...Array.from({ length: Math.max(1, Math.ceil(options.runs / 4)) }, (_, nth) => ({
      kind: 'SIGKILL' as const,
      midMcpCall: nth % 3 === 0,
    })),
    ...Array.from({ length: Math.max(1, Math.ceil(options.runs / 10)) }, (_, nth) => ({
      kind: 'SIGTERM' as const,
      midMcpCall: nth % 3 === 0,
    })),
    ...((options.serverRestart ?? true) ? [{ kind: 'restart' as const }] : []),
  ].map((fault) => ({ ...fault, at: Math.max(2, Math.floor(minimumRequests * (0.05 + chaosRandom() * 0.65))) }));
  /**
   * The slot of a worker that is up and whose MCP server began a `pay` call less than MID_CALL_MS ago
   * and has not ended it: the call is still running (it takes at least 0.2 s), so stopping the worker
   * now lands in the middle of it.
   */
  const payingWorker = (): number | undefined => {
    const now = Date.now();
    const ended = new Set(
      sideEffects.effects
        .filter((effect) => effect.tool === 'pay' && effect.phase === 'end')
        .map((effect) => effect.key),
    );
    for (let position = sideEffects.effects.length - 1; position >= 0; position -= 1) {
      const effect = sideEffects.effects[position]!;
      if (now - effect.at > MID_CALL_MS) break;
      if (effect.tool !== 'pay' || effect.phase !== 'start' || ended.has(effect.key)) continue;
      const slot = workers.findIndex((worker) => worker !== null && workerNames.get(worker) === effect.worker);
      if (slot >= 0) return slot;
    }
    return undefined;
  };
  /** Waits (up to MID_CALL_WAIT_MS, or until the runs are over) for a worker in the middle of a `pay` call. */
  const midMcpCall = async (): Promise<number | undefined> => {
    const deadline = Date.now() + MID_CALL_WAIT_MS;
    while (!finished && Date.now() < deadline) {
      const slot = payingWorker();
      if (slot !== undefined) return slot;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return undefined;
  };
  // A killed worker restarts in the background; the next fault picks a worker that is up.
  const restarting = new Set<Promise<void>>();
  const faults = (async () => {
    for (const fault of plannedFaults.sort((a, b) => a.at - b.at)) {
      await model.requestsReached(fault.at, () => finished);
      if (finished) break;
      if (fault.kind === 'restart') {
        log(`chaos: restarting the dev server (request ${model.requestCount})`);
        serverDown = true;
        const outage = { from: Date.now(), to: Number.POSITIVE_INFINITY };
        outages.push(outage);
        await server.stop();
        server = await startDevServer(serverOptions);
        outage.to = Date.now();
        serverDown = false;
        counts.restarts += 1;
        continue;
      }
      while (workers.every((worker) => worker === null)) await Promise.race(restarting);
      const paying = fault.midMcpCall ? await midMcpCall() : undefined;
      if (finished) break;
      const up = workers.flatMap((worker, slot) => (worker ? [slot] : []));
      // Drawn either way, so the faults after it are what they were.
      const chosen = up[Math.floor(chaosRandom() * up.length)]!;
      const slot = paying ?? chosen;
      const worker = workers[slot]!;
      workers[slot] = null;
      if (paying !== undefined) counts.midMcpCall += 1;
      log(
        `chaos: ${fault.kind} worker ${slot} (request ${model.requestCount}${paying !== undefined ? ', during an MCP pay call' : ''})`,
      );
      deaths.push({ worker: workerNames.get(worker) ?? 'unknown', at: Date.now() });
      mcpProcesses.push(...mcpServerProcesses(worker));
      await worker.kill(fault.kind);
      if (fault.kind === 'SIGKILL') counts.kills += 1;
      else counts.terms += 1;
      const pause = 300 + chaosRandom() * 1200;
      const restart = (async () => {
        await new Promise((resolve) => setTimeout(resolve, pause));
        workers[slot] = await persistently(spawn, Date.now() + 60_000);
      })();
      restarting.add(restart);
      void restart.finally(() => restarting.delete(restart));
    }
    await Promise.all(restarting);
  })();

  const records: RunRecord[] = [];
  const queue = Array.from({ length: options.runs }, (_, index) => index);
  const runOne = async (index: number) => {
    const next = random(options.seed * 31 + index);
    const workflowId = `chaos-${options.seed}-${index}-${started}`;
    const deadline = Date.now() + RUN_DEADLINE_MS;
    const handle = await persistently(
      () => client.start({ agent: 'chaos', input: `chaos run ${index}: add the numbers` }, { workflowId }),
      deadline,
      (error) => error instanceof WorkflowExecutionAlreadyStartedError,
    ).catch((error: unknown) => {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return client.run(workflowId);
      throw error;
    });
    const record: RunRecord = {
      index,
      handle,
      messages: [],
      abortSentAt: null,
      abortWithWorkerUp: false,
      closedAt: null,
      result: null,
      failed: false,
      error: null,
    };
    records.push(record);
    const actions: Array<Promise<void>> = [];
    const messageCount = next() < 0.6 ? 1 + Math.floor(next() * 2) : 0;
    for (let message = 0; message < messageCount; message += 1) {
      const delay = 200 + next() * 5000;
      const viaUpdate = next() < 0.5;
      const content = `run ${index} user message ${message} via ${viaUpdate ? 'update' : 'signal'}`;
      actions.push(
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, delay));
          if (record.closedAt !== null) return;
          if (viaUpdate) {
            try {
              await handle.submitUserMessage(content);
              record.messages.push({ content, fate: 'accepted' });
            } catch (error) {
              // Refused by the validator: not accepted. Any other error leaves its fate unknown.
              if (!(error instanceof WorkflowUpdateFailedError)) record.messages.push({ content, fate: 'unknown' });
            }
          } else {
            try {
              await handle.sendUserMessage(content);
              record.messages.push({ content, fate: 'delivered' });
            } catch {
              // The run had closed: never accepted.
            }
          }
        })(),
      );
    }
    if (next() < 0.3) {
      const delay = 500 + next() * 6000;
      actions.push(
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, delay));
          if (record.closedAt !== null) return;
          record.abortSentAt = Date.now();
          record.abortWithWorkerUp = workers.some((worker) => worker !== null) && !serverDown;
          counts.aborts += 1;
          log(`run ${index}: abort`);
          await persistently(() => handle.abort('chaos abort'), deadline).catch(() => undefined);
        })(),
      );
    }
    try {
      record.result = await persistently(
        () => handle.result(),
        deadline,
        (error) => error instanceof WorkflowFailedError || (error as Error).name === 'RunFailedError',
      );
    } catch (error) {
      record.failed = error instanceof WorkflowFailedError || (error as Error).name === 'RunFailedError';
      record.error = (error as Error).message;
    }
    record.closedAt = Date.now();
    await Promise.all(actions);
    const abortToClose =
      record.abortSentAt !== null ? ` (abort to close ${record.closedAt - record.abortSentAt} ms)` : '';
    log(`run ${index}: ${record.result?.status ?? `error: ${record.error}`}${abortToClose}`);
  };
  const lanes = Array.from({ length: options.concurrency ?? 5 }, async () => {
    for (let index = queue.shift(); index !== undefined; index = queue.shift()) await runOne(index);
  });
  await Promise.all(lanes);
  finished = true;
  await faults;

  const checks: RunCheck[] = [];
  for (const record of records.sort((a, b) => a.index - b.index)) checks.push(await checkRun(record, model));
  for (const worker of workers) {
    if (!worker) continue;
    mcpProcesses.push(...mcpServerProcesses(worker));
    await worker.kill('SIGTERM');
  }
  const serverProcessesLeft = await processesLeft(mcpProcesses);
  // Every worker and MCP server has stopped: no execution is reported from now on.
  const mcpEffects = sideEffects.effects.filter((effect) => effect.tool !== undefined);
  for (const [position, check] of checks.entries()) {
    const mcp = checkMcp(records[position]!, model, mcpEffects);
    check.mcp = mcp.counts;
    check.problems.push(...mcp.problems);
  }
  await client.close();
  await fake.close();
  await server.stop();
  await sideEffects.close();
  rmSync(folder, { recursive: true, force: true });
  // The registered tools' side effects (the MCP tools' are checked by checkMcp).
  const effects = sideEffects.effects.filter((effect) => effect.tool === undefined);
  const repeats = finishedRepeats(effects, deaths, CHECKPOINT_WINDOW_MS, outages, HEARTBEAT_TIMEOUT_SECONDS * 1000);
  const report: Omit<ChaosReport, 'table'> = {
    runs: checks,
    providerFaults: model.faults,
    workerKills: counts.kills,
    workerTerms: counts.terms,
    serverRestarts: counts.restarts,
    messagesAccepted: records.reduce(
      (total, record) => total + record.messages.filter((message) => message.fate !== 'unknown').length,
      0,
    ),
    aborts: counts.aborts,
    sideEffects: {
      calls: new Set(effects.map((effect) => effect.key)).size,
      finished: repeats.outside,
      finishedInWindow: repeats.inWindow,
      finishedInOutage: repeats.inOutage,
      started: restartedCalls(effects),
    },
    mcp: {
      ...sumMcp(checks.map((check) => check.mcp)),
      workerStopsMidCall: counts.midMcpCall,
      serverProcesses: new Set(mcpProcesses).size,
      serverProcessesLeft,
    },
    durationMs: Date.now() - started,
  };
  return { ...report, table: table(report) };
}

/** Everything the issue asks of one run, checked against what the model sent and what was accepted. */
async function checkRun(record: RunRecord, model: ChaosModel): Promise<RunCheck> {
  const problems: string[] = [];
  const result = record.result;
  const history = await record.handle.workflow.fetchHistory().catch(() => undefined);
  const events = history?.events ?? [];
  // EVENT_TYPE_WORKFLOW_TASK_FAILED; its cause says why (e.g. 1 UNHANDLED_COMMAND, benign and expected).
  const failures = events.filter((event) => Number(event.eventType) === 9);
  const taskFailures = failures.length;
  const causes = failures.map((event) => Number(event.workflowTaskFailedEventAttributes?.cause ?? 0));
  let lost = 0;
  let duplicated = 0;
  let valid = false;
  if (causes.some((cause) => cause !== 1)) {
    const messages = failures.map((event) => event.workflowTaskFailedEventAttributes?.failure?.message ?? '?');
    problems.push(`workflow task failures with causes ${causes.join(', ')}: ${messages.join(' | ').slice(0, 2000)}`);
  }
  if (!result) problems.push(`${record.failed ? 'failed' : 'not settled'}: ${record.error ?? 'no result'}`);
  else {
    const transcript = result.transcript;
    valid = true;
    try {
      validateToolLinkage(transcript);
    } catch (error) {
      valid = false;
      problems.push(`invalid linkage: ${(error as Error).message}`);
    }
    if (transcript[0]?.['role'] !== 'system') {
      valid = false;
      problems.push('the transcript does not start with the system message');
    }
    const texts = model.sentTexts.get(record.index) ?? new Set<string>();
    const calls = model.sentCalls.get(record.index) ?? new Map<string, SentCall>();
    const aborted = result.status === 'aborted';
    for (const [position, message] of transcript.entries()) {
      const problem = messageProblem(message, position === transcript.length - 1, aborted, texts, calls, transcript);
      if (problem) {
        valid = false;
        problems.push(problem);
      }
    }
    const seen = transcript.map((message) => JSON.stringify(message));
    duplicated = seen.length - new Set(seen).size;
    const delivered = [
      ...transcript.filter((message) => message['role'] === 'user').map((message) => String(message['content'])),
      ...(result.unprocessed_messages ?? []).map((message) => message.content),
    ];
    for (const message of record.messages) {
      const times = delivered.filter((content) => content === message.content).length;
      if (times > 1) {
        duplicated += times - 1;
        problems.push(`message delivered ${times} times: ${message.content}`);
      }
      if (times === 0 && message.fate === 'accepted') {
        lost += 1;
        problems.push(`accepted message lost: ${message.content}`);
      }
    }
    const missing = record.messages.filter(
      (message) => message.fate === 'delivered' && !delivered.includes(message.content),
    );
    if (missing.length > 0) {
      // A signal the run refused shows as an input_rejected event; any other missing one is lost.
      const status = await record.handle.status().catch(() => undefined);
      const rejected = (status?.events ?? []).filter((event) => event.event_type === 'input_rejected').length;
      if (!status || missing.length > rejected) {
        lost += missing.length - rejected;
        problems.push(
          `delivered signal message(s) neither in the transcript nor reported: ${missing.map((message) => message.content).join(', ')}`,
        );
      }
    }
  }
  return {
    index: record.index,
    workflowId: record.handle.workflowId,
    settled: result !== null || record.failed,
    status: result?.status ?? 'failed',
    valid,
    lost,
    duplicated,
    stuck: result === null && !record.failed,
    workflowTaskFailures: taskFailures,
    abortToCloseMs:
      record.abortSentAt !== null && record.closedAt !== null && result?.status === 'aborted'
        ? record.closedAt - record.abortSentAt
        : null,
    abortWithWorkerUp: record.abortWithWorkerUp,
    mcp: NO_MCP_CALLS,
    problems,
  };
}

const NO_MCP_CALLS: McpCounts = { pay: 0, quote: 0, executed: 0, interrupted: 0, duplicates: 0, resent: 0 };

function sumMcp(counts: McpCounts[]): McpCounts {
  const total = { ...NO_MCP_CALLS };
  for (const count of counts) for (const key of Object.keys(total) as Array<keyof McpCounts>) total[key] += count[key];
  return total;
}

/**
 * A run's MCP calls against what the Python server reported executing (its labels start with
 * `run<index>-`): a `shop_pay` call ran at most once, and exactly once when the model got its result; a
 * `shop_quote` result was really computed; nothing ran for a call the transcript does not hold. The
 * content of each result (the real one, the interrupted-call error, or cancelled by an abort) is
 * checked with the rest of the transcript (messageProblem).
 */
function checkMcp(
  record: RunRecord,
  model: ChaosModel,
  effects: readonly SideEffect[],
): { counts: McpCounts; problems: string[] } {
  const counts = { ...NO_MCP_CALLS };
  const problems: string[] = [];
  const executions = new Map<string, { tool: string; starts: number; ends: number }>();
  for (const effect of effects) {
    if (!effect.label.startsWith(`run${record.index}-`)) continue;
    const key = `${effect.tool}:${effect.label}`;
    const entry = executions.get(key) ?? { tool: effect.tool!, starts: 0, ends: 0 };
    if (effect.phase === 'start') entry.starts += 1;
    else entry.ends += 1;
    executions.set(key, entry);
  }
  for (const [key, execution] of executions) {
    if (execution.tool !== 'pay') continue;
    if (execution.starts > 0) counts.executed += 1;
    if (execution.starts > 1) {
      counts.duplicates += 1;
      problems.push(`MCP call ${key} executed ${execution.starts} times on the server (not idempotent: at most once)`);
    }
  }
  const transcript = record.result?.transcript ?? [];
  const sent = model.sentCalls.get(record.index) ?? new Map<string, SentCall>();
  const inTranscript = new Set<string>();
  for (const message of transcript) {
    if (message['role'] !== 'tool') continue;
    const call = sent.get(String(message['tool_call_id']));
    if (!call || (call.name !== MCP_PAY && call.name !== MCP_QUOTE)) continue;
    const tool = call.name.slice(MCP_PREFIX.length);
    const label = (JSON.parse(call.arguments) as { label: string }).label;
    const key = `${tool}:${label}`;
    inTranscript.add(key);
    const execution = executions.get(key) ?? { tool, starts: 0, ends: 0 };
    const content = String(message['content']);
    const answered = content === expectedResult(call);
    if (tool === 'pay') {
      counts.pay += 1;
      if (content === interruptedMcpContent(call.name)) counts.interrupted += 1;
      if (answered && (execution.starts !== 1 || execution.ends !== 1))
        problems.push(
          `the model got ${key}'s result, but the server reported ${execution.starts} start(s) and ${execution.ends} end(s)`,
        );
    } else {
      counts.quote += 1;
      if (execution.starts > 1) counts.resent += 1;
      if (answered && execution.ends === 0)
        problems.push(`the model got ${key}'s result, but the server never ended it`);
    }
  }
  for (const key of executions.keys())
    if (!inTranscript.has(key) && record.result)
      problems.push(`MCP call ${key} executed on the server, but no result for it is in the transcript`);
  return { counts, problems };
}

/** The MCP server processes (test/support/python_mcp_server.py) a worker started, as they are now. */
function mcpServerProcesses(worker: WorkerProcess): number[] {
  const root = worker.child.pid;
  if (root === undefined) return [];
  return processTree(root).filter((pid) => pid !== root && commandLine(pid).includes('python_mcp_server.py'));
}

/**
 * How many of these processes still run once their workers have stopped: a stdio server reads the end
 * of its input when its worker dies (any way) and exits. Waits up to 10 s for them; any left is killed
 * (and counted).
 */
async function processesLeft(pids: readonly number[]): Promise<number> {
  const deadline = Date.now() + 10_000;
  let running = pids.filter(isRunning);
  while (running.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    running = running.filter(isRunning);
  }
  for (const pid of running)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  return running.length;
}

/** Why one transcript message is not something the model really sent (null when it is). */
function messageProblem(
  message: Message,
  last: boolean,
  aborted: boolean,
  texts: Set<string>,
  calls: Map<string, SentCall>,
  transcript: Message[],
): string | null {
  const role = message['role'];
  if (role === 'assistant') {
    const toolCalls = message['tool_calls'] as
      Array<{ id: string; function: { name: string; arguments: string } }> | undefined;
    if (toolCalls) {
      for (const call of toolCalls) {
        const sent = calls.get(call.id);
        if (sent?.arguments !== call.function.arguments || sent.name !== call.function.name)
          return `tool call ${call.id} has a name or arguments the model never sent: ${call.function.name} ${call.function.arguments}`;
      }
      return null;
    }
    const content = String(message['content'] ?? '');
    if (texts.has(content)) return null;
    // Only an abort may commit a partial reply, and only as a prefix of what the model was sending.
    if (aborted && last && content.endsWith(truncatedAssistantContent('', 'chaos abort'))) {
      const partial = content.slice(0, -truncatedAssistantContent('', 'chaos abort').length);
      // Empty when the abort came between phases or before the first token.
      if (partial === '' || [...texts].some((text) => text.startsWith(partial))) return null;
    }
    return `assistant text the model never sent whole: ${JSON.stringify(content.slice(0, 120))}`;
  }
  if (role === 'tool') {
    const id = String(message['tool_call_id']);
    const sent = calls.get(id);
    const content = String(message['content']);
    if (sent === undefined) return `a result for a call the model never made: ${id}`;
    const tool = sent.name;
    const expected = expectedResult(sent);
    if (content === expected) return null;
    // A non-idempotent MCP call a batch retry found unfinished is not sent again: the model is told so.
    if (tool === MCP_PAY && content === interruptedMcpContent(tool)) return null;
    if (aborted && content === toolCancelledContent(tool, 'chaos abort')) return null;
    return `tool ${id} answered ${content.slice(0, 80)}, not ${expected} for ${tool} ${sent.arguments}`;
  }
  if (role === 'user' || role === 'system') return null;
  return `unexpected message role ${String(role)} at ${transcript.indexOf(message)}`;
}

/** What a call's tool answers when it runs to its end (an MCP tool's text as the server wrote it). */
function expectedResult(call: SentCall): string {
  const parsed = JSON.parse(call.arguments) as { a?: number; b?: number; seconds?: number; label?: string };
  switch (call.name) {
    case 'charge':
      return JSON.stringify(`charged ${parsed.label}`);
    case 'wait':
      return JSON.stringify(`waited ${parsed.seconds} s`);
    case MCP_PAY:
      return `paid ${parsed.label}`;
    case MCP_QUOTE:
      return `quote for ${parsed.label}: 42`;
    default:
      return String(parsed.a! + parsed.b!);
  }
}

function percentile(values: number[], fraction: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function table(report: Omit<ChaosReport, 'table'>): string {
  const runs = report.runs;
  const mcp = report.mcp;
  const count = (predicate: (run: RunCheck) => boolean) => runs.filter(predicate).length;
  const latencies = (up: boolean) =>
    runs.flatMap((run) => (run.abortToCloseMs !== null && run.abortWithWorkerUp === up ? [run.abortToCloseMs] : []));
  const spread = (values: number[]) =>
    values.length === 0 ? '-' : `${percentile(values, 0.5)} / ${percentile(values, 0.95)} ms (${values.length})`;
  const faults = Object.entries(report.providerFaults)
    .map(([kind, times]) => `${kind} ${times}`)
    .join(', ');
  return [
    `runs ${runs.length} (completed ${count((run) => run.status === 'completed')}, aborted ${count((run) => run.status === 'aborted')}), ${report.messagesAccepted} user messages accepted or delivered, ${report.aborts} aborts, ${Math.round(report.durationMs / 1000)} s`,
    `provider faults: ${faults}`,
    `infrastructure faults: worker SIGKILL ${report.workerKills}, worker SIGTERM ${report.workerTerms}, dev-server restarts ${report.serverRestarts}`,
    `side effects (counted outside the workers): ${report.sideEffects.calls} calls, ${report.sideEffects.finished} finished calls repeated (besides ${report.sideEffects.finishedInWindow} that finished within ${CHECKPOINT_WINDOW_MS} ms of their worker's kill and ${report.sideEffects.finishedInOutage} that finished while the dev server was down, the documented at-least-once cases), ${report.sideEffects.started} calls in flight at a crash started again`,
    `MCP tools (Python stdio server, executions counted outside the workers): ${mcp.pay + mcp.quote} calls; ${MCP_PAY} (not idempotent) ${mcp.pay} calls, ${mcp.executed} executed, ${mcp.interrupted} interrupted (the model was told it may or may not have run), ${mcp.duplicates} executed twice; ${MCP_QUOTE} (readOnlyHint) ${mcp.quote} calls, ${mcp.resent} sent again after a crash; ${mcp.workerStopsMidCall} worker stops during a ${MCP_PAY} call; ${mcp.serverProcesses} server processes, ${mcp.serverProcessesLeft} left running after their worker stopped`,
    '',
    '| runs | settled | valid | lost | duplicated | stuck | workflow task failures | MCP calls / interrupted / duplicated | abort-to-close p50 / p95, a worker up | with no worker up |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${runs.length} | ${count((run) => run.settled)} | ${count((run) => run.valid)} | ${runs.reduce((total, run) => total + run.lost, 0)} | ${runs.reduce((total, run) => total + run.duplicated, 0)} | ${count((run) => run.stuck)} | ${runs.reduce((total, run) => total + run.workflowTaskFailures, 0)} | ${mcp.pay + mcp.quote} / ${mcp.interrupted} / ${mcp.duplicates} | ${spread(latencies(true))} | ${spread(latencies(false))} |`,
    ...runs
      .filter((run) => run.problems.length > 0)
      .map((run) => `run ${run.index} (${run.workflowId}): ${run.problems.join('; ')}`),
  ].join('\n');
}
