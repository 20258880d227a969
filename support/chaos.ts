import {
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowExecutionInfo,
  type WorkflowHandle,
} from '@temporalio/client';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { interruptedMcpMessage } from '../src/activities/mcp-tool-call';
import { abortedCallNote } from '../src/activities/uncertain-effect';
import { PatchloopClient, type RunHandle } from '../src/client/patchloop-client';
import {
  serializeToolResult,
  toolCancelledContent,
  toolFailureContent,
  toolStepErrorContent,
  truncatedAssistantContent,
  validateToolLinkage,
  type Message,
} from '../src/context';
import { FakeModelServer, type ChatRequestBody } from '../src/fake-model/server';
import { callTools, failWith, reply, type FakeStep, type FakeToolCall, type ReplyFault } from '../src/fake-model/steps';
import type { AgentRunResult } from '../src/runtime';
import { configFromEnvironment } from '../src/config/environment';
import { freePort } from '../src/worker/free-port';
import { startDevServer, type DevServer } from '../src/worker/temporal-cli';
import { repositoryRoot } from './repository';
import { startTemporalCluster } from './temporal-cluster';
import { abortSignalToClose, isAbortSignal } from './abort-timing';
import { commandLine, isRunning, processTree } from './process-tree';
import { pythonMcpServer } from './mcp-servers';
import {
  finishedRepeats,
  restartedCalls,
  startSideEffectServer,
  type ServerOutage,
  type SideEffect,
  type WorkerDeath,
} from './side-effects';
import { spawnWorker, type WorkerProcess } from './worker-process';

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
  /** Which Temporal the run gets, of its own: the dev server (default) or temporal-server on PostgreSQL. */
  temporal?: 'dev server' | 'cluster';
  log?: (line: string) => void;
}

/** The chaos run's own Temporal: restarted in place (the same storage and address) once. */
interface ChaosTemporal {
  address: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function chaosTemporal(kind: ChaosOptions['temporal'], folder: string): Promise<ChaosTemporal> {
  const dynamicConfig = { 'limit.historyCount.suggestContinueAsNew': 400 };
  if (kind === 'cluster') {
    const cluster = await startTemporalCluster({ folder: join(folder, 'cluster'), dynamicConfig });
    return { address: cluster.address, restart: () => cluster.restartServer(), stop: () => cluster.stop() };
  }
  const serverOptions = { port: await freePort(), dbFile: join(folder, 'temporal.db'), dynamicConfig };
  let server: DevServer = await startDevServer(serverOptions);
  return {
    address: server.address,
    restart: async () => {
      await server.stop();
      server = await startDevServer(serverOptions);
    },
    stop: () => server.stop(),
  };
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
  /** Where the run stood when its abort was sent (null: not aborted). */
  abortPlace: AbortPlace | null;
  /** The run's MCP calls (see McpCounts); their problems are in `problems`. */
  mcp: McpCounts;
  /** A run of the agent with a sub-agent (isSubagentRun), and its sub-agent calls (their problems are in `problems` too). */
  subagentRun: boolean;
  subagents: SubagentCheck[];
  /**
   * How the run's chain reached children it had started before: `startChild` refused as already
   * started (StartChildWorkflowExecutionFailed), and `awaitAgentRun` activities scheduled to wait for one.
   */
  startsRefused: number;
  reattachWaits: number;
  problems: string[];
}

/**
 * One sub-agent call of a run's transcript, and the child run it started: started exactly once, settled
 * with a valid transcript, its answer (or a well-formed error) the call's one result, and the model asked
 * for each of the child's steps only as often as the child's own LLM attempts say.
 */
export interface SubagentCheck {
  index: number;
  toolCallId: string;
  /** The child's workflow id (null: none was started, the call was cancelled first). */
  workflowId: string | null;
  /** Executions with that id that were started (its own continue-as-new runs aside): must be 1. */
  starts: number;
  /** completed, aborted, budget_exhausted, failed; `not started`; `running` (it did not settle). */
  status: string;
  valid: boolean;
  /** What the caller's transcript holds for the call: the child's answer, an error result, a cancellation. */
  result: 'answer' | 'error' | 'cancelled' | 'other';
  /**
   * Requests the model got for the child, the LLM attempts the child's histories record, and the
   * requests of LLM calls cancelled by an abort while waiting to retry (their attempts go unrecorded).
   */
  modelRequests: number;
  llmAttempts: number;
  unrecordedRequests: number;
  /** Worker processes that ran the child's workflow tasks: more than one, it was replayed on another. */
  workers: number;
  /** Requests at a state the model had seen: after it broke the reply, or not (a worker stop, an outage, a timeout). */
  resentAfterFault: number;
  resentOtherwise: number;
  /** Requests at an earlier state than one seen before, or after the child closed: finished work done again (must be 0). */
  restarted: number;
  /** Calls of `charge` (side effects) in the child's transcript. */
  charges: number;
  mcp: McpCounts;
  workflowTaskFailures: number;
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
  /**
   * Sub-agent calls summed over the runs (see SubagentCheck); `twoAtOnce`: batches that called two
   * children; `workerStopsMidChild`: worker stops that landed on the worker running a child in flight
   * (the second of each of SIGKILL and SIGTERM, ..., waits for one).
   */
  subagents: SubagentTotals & { workerStopsMidChild: number };
  durationMs: number;
  table: string;
}

export interface SubagentTotals {
  runs: number;
  calls: number;
  twoAtOnce: number;
  /** Children started exactly once, more than once (must be 0), never (the call was cancelled first). */
  startedOnce: number;
  startedTwice: number;
  notStarted: number;
  completed: number;
  aborted: number;
  failed: number;
  valid: number;
  /** The caller's results: the child's answer, an error result, a cancellation. */
  answered: number;
  errors: number;
  cancelled: number;
  modelRequests: number;
  llmAttempts: number;
  unrecordedRequests: number;
  /** Children whose workflow tasks ran on more than one worker process (replayed after a stop). */
  replayedElsewhere: number;
  resentAfterFault: number;
  resentOtherwise: number;
  restarted: number;
  startsRefused: number;
  reattachWaits: number;
  charges: number;
  mcp: McpCounts;
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
 * The MCP server of the chaos agent: support/python_mcp_server.py over stdio, started by each worker
 * (the test venv's Python). Its tools `pay` (not idempotent) and `quote` (`readOnlyHint`) report every
 * execution to the side-effect server, whose address and the worker's name reach the server through
 * `${VAR}` values of `env`, resolved on the worker.
 */
const MCP_SERVER = 'python';
const MCP_PREFIX = 'shop_';
const MCP_PAY = `${MCP_PREFIX}pay`;
const MCP_QUOTE = `${MCP_PREFIX}quote`;

/**
 * The agents of sub-agent runs: `chaos_lead` has the chaos agent's tools and calls `chaos_helper` (tool
 * name the agent's own), which has them too. A child's task names it: `run<index>/<call id>`, its key.
 */
const LEAD_AGENT = 'chaos_lead';
const HELPER_AGENT = 'chaos_helper';
const SUBAGENT_TOOL = HELPER_AGENT;
const CHILD_TASK_PREFIX = 'chaos sub-agent task';
const CHILD_TASK = /chaos sub-agent task (run\d+\/call_\d+_s\d+)/;

/** The result a non-idempotent MCP call gets when a batch retry finds it unfinished (activities/mcp-tool-call.ts). */
export function interruptedMcpContent(tool: string): string {
  return toolStepErrorContent(interruptedMcpMessage(tool, MCP_SERVER));
}

/** The cancellation of a non-idempotent MCP call still running when its run was aborted (activities/mcp-tool-call.ts). */
function abortedMcpContent(tool: string): string {
  return toolCancelledContent(tool, `chaos abort. ${abortedCallNote(tool, MCP_SERVER)}`);
}

/**
 * What the model is scripted to do in a run or a sub-agent's run, named by its key (`run<index>`, or
 * `run<index>/<call id>` for the child of that call): some tool iterations (`iterations` is the fewest,
 * `spread` how many more there may be), then an answer that says what it saw. `salt` varies the sums.
 */
function planFor(
  key: string,
  salt: number,
  next: () => number,
  nextMcp: () => number,
  { iterations: fewest, spread }: { iterations: number; spread: number } = { iterations: 2, spread: 4 },
): RunPlan {
  const steps: FakeToolCall[][] = [];
  const iterations = fewest + Math.floor(next() * spread);
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
                label: `${key}-${step}-${calls}`,
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
                  label: `${key}-${step}-${call}`,
                  seconds: Math.round(next() * 8) / 10,
                }),
              }
            : {
                id: `call_${step}_${call}`,
                name: 'add',
                arguments: JSON.stringify({ a: Math.floor(next() * 1000), b: Math.floor(next() * 1000) + salt }),
              },
      ),
      ...mcp,
    ]);
  }
  return { steps };
}

/**
 * Runs with sub-agents: every fourth run (1, 5, 9, ...) is one of the `chaos_lead` agent, whose plan also
 * calls the `chaos_helper` agent in one or two of its batches, beside the other calls; some batches call
 * it twice at once (always in runs 5, 13, ...). Drawn from a generator of their own, so the plans of the
 * other runs, and the rest of these, are what they were before sub-agents were added.
 */
export function isSubagentRun(index: number): boolean {
  return index % 4 === 1;
}

function addSubagentCalls(plan: RunPlan, index: number, next: () => number): RunPlan {
  const batches = next() < 0.3 ? 2 : 1;
  const chosen = new Set<number>();
  while (chosen.size < Math.min(batches, plan.steps.length)) chosen.add(Math.floor(next() * plan.steps.length));
  const steps = plan.steps.map((calls, step) => {
    if (!chosen.has(step)) return calls;
    const parallel = index % 8 === 5 || next() < 0.35 ? 2 : 1;
    const subagentCalls = Array.from({ length: parallel }, (_, nth): FakeToolCall => {
      const id = `call_${step}_s${nth}`;
      const input = `${CHILD_TASK_PREFIX} run${index}/${id}: add the numbers you are given`;
      return {
        id,
        name: SUBAGENT_TOOL,
        arguments: JSON.stringify(next() < 0.5 ? { input } : { input, context: `asked by chaos run ${index}` }),
      };
    });
    return [...calls, ...subagentCalls];
  });
  return { steps };
}

/** The key of the child run a sub-agent call's arguments start (its task names it). */
function childKeyOf(argumentText: string): string | undefined {
  const input = (JSON.parse(argumentText) as { input?: string }).input ?? '';
  return CHILD_TASK.exec(input)?.[1];
}

/** The key of the child run with this workflow id (`<run id>::<chain>::chaos_helper::<iteration>::<call id>`). */
function childKeyOfId(workflowId: string): string | undefined {
  const found = new RegExp(`^chaos-\\d+-(\\d+)-\\d+::[0-9a-f]{8}::${HELPER_AGENT}::\\d+::(.+)$`).exec(workflowId);
  return found ? `run${found[1]}/${found[2]}` : undefined;
}

/** A small string hash, to seed a child's plan from its key. */
function hashOf(text: string): number {
  let hash = 2166136261;
  for (const char of text) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash;
}

function childFinalText(key: string): string[] {
  return [`Sub-agent ${key} `, `is done; `, `its sums `, `are checked.`];
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

/** A model request as the fake model received it: when, how many messages it held, whether it was broken. */
export interface ModelRequest {
  at: number;
  messages: number;
  faulted: boolean;
}

/**
 * The model's side: a deterministic reply per request state, broken at random like a real provider.
 * Runs are keyed `run<index>` (their first user message names the run), sub-agent runs by the key their
 * task names (`run<index>/<call id>`).
 */
class ChaosModel {
  readonly faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<ProviderFaultKind, number>;
  /** Per run or child: every complete answer text and tool call the model was scripted to send. */
  readonly sentTexts = new Map<string, Set<string>>();
  readonly sentCalls = new Map<string, Map<string, SentCall>>();
  /** Per run or child: every request the model received. */
  readonly requests = new Map<string, ModelRequest[]>();
  private readonly plans = new Map<string, RunPlan>();
  private readonly faultRandom = new Map<string, () => number>();
  private readonly consecutiveFaults = new Map<string, number>();
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

  plan(key: string): RunPlan {
    let plan = this.plans.get(key);
    if (!plan) {
      const child = key.includes('/');
      const index = Number(/^run(\d+)/.exec(key)![1]);
      const salt = child ? hashOf(key) : index;
      const seed = child ? this.seed * 7919 + salt : this.seed * 7919 + index;
      const mcpSeed = child ? this.seed * 15485863 + salt : this.seed * 15485863 + index;
      // A child does less: one to three iterations.
      const shape = child ? { iterations: 1, spread: 3 } : undefined;
      plan = planFor(key, child ? salt % 1000 : index, random(seed), random(mcpSeed), shape);
      if (!child && isSubagentRun(index)) plan = addSubagentCalls(plan, index, random(this.seed * 49979687 + index));
      this.plans.set(key, plan);
    }
    return plan;
  }

  /** The children a run's plan calls (their keys), and theirs: every plan the run may ask for. */
  childKeys(key: string): string[] {
    return this.plan(key).steps.flatMap((calls) =>
      calls.flatMap((call) => (call.name === SUBAGENT_TOOL ? [childKeyOf(call.arguments)!] : [])),
    );
  }

  respond = (body: ChatRequestBody): FakeStep => {
    this.requestCount += 1;
    for (const waiter of this.waiters.splice(0)) waiter.wake();
    const first = String(body.messages.find((message) => message['role'] === 'user')?.['content'] ?? '');
    const child = CHILD_TASK.exec(first)?.[1];
    const index = Number(/^chaos run (\d+)/.exec(first)?.[1] ?? -1);
    const key = child ?? (index >= 0 ? `run${index}` : undefined);
    if (key === undefined) return failWith(400, { message: 'not a chaos run' });
    const plan = this.plan(key);
    const done = body.messages.filter(
      (message) => message['role'] === 'assistant' && Array.isArray(message['tool_calls']),
    ).length;
    const intended: FakeStep =
      done < plan.steps.length && body.tools
        ? callTools(plan.steps[done]!, { chunkDelayMs: 60 })
        : reply(child ? childFinalText(key) : finalText(index, body.messages), { chunkDelayMs: 120 });
    if (intended.kind === 'reply') {
      const texts = this.sentTexts.get(key) ?? new Set();
      if (intended.toolCalls) {
        const calls = this.sentCalls.get(key) ?? new Map<string, SentCall>();
        for (const call of intended.toolCalls) calls.set(call.id, { name: call.name, arguments: call.arguments });
        this.sentCalls.set(key, calls);
      } else texts.add((intended.content as string[]).join(''));
      this.sentTexts.set(key, texts);
    }
    const sent = this.broken(key, intended);
    const requests = this.requests.get(key) ?? [];
    requests.push({ at: Date.now(), messages: body.messages.length, faulted: sent !== intended });
    this.requests.set(key, requests);
    return sent;
  };

  private broken(key: string, step: FakeStep): FakeStep {
    let next = this.faultRandom.get(key);
    if (!next) {
      const index = Number(/^run(\d+)/.exec(key)![1]);
      next = random(this.seed * 104729 + (key.includes('/') ? hashOf(key) : index));
      this.faultRandom.set(key, next);
    }
    // At most three faults in a row, so every run makes progress.
    const streak = this.consecutiveFaults.get(key) ?? 0;
    if (streak >= 3 || next() > 0.4 || step.kind !== 'reply') {
      this.consecutiveFaults.set(key, 0);
      return step;
    }
    const kind = FAULT_KINDS[Math.floor(next() * FAULT_KINDS.length)]!;
    this.faults[kind] += 1;
    this.consecutiveFaults.set(key, kind === 'slow_first_byte' ? 0 : streak + 1);
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

/**
 * Where an abort found its run: served by a worker that stays up; held by a worker stopped before the run
 * closed (its phase or its workflow task on that worker at the abort: only the heartbeat timeout or the
 * sticky queue's timeout frees it); or sent while no worker was up, or the server was down (it waits for
 * a restart).
 */
type AbortPlace = 'worker up' | 'held by a stopped worker' | 'no worker or server up';

/** A worker process stopped by the chaos: its process tree's pids (a worker's identity is `pid@host`). */
interface StoppedWorker {
  pids: number[];
  at: number;
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
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-chaos-'));
  const server = await chaosTemporal(options.temporal, folder);
  try {
    return await chaosOn(server, folder, options);
  } finally {
    // Stopped once the runs are checked, or here when the run threw: a cluster is a PostgreSQL too.
    await server.stop();
  }
}

async function chaosOn(server: ChaosTemporal, folder: string, options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const log = (line: string) => options.log?.(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`);
  const model = new ChaosModel(options.seed);
  const fake = await FakeModelServer.start({ responder: model.respond, keepBodies: false });
  const taskQueue = `chaos-${options.seed}-${Date.now()}`;
  // The chaos agent; the lead is the same with a sub-agent, the helper, which is the same again.
  const chaosAgent = {
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
  };
  const agents = [
    { name: 'chaos', instructions: 'Add the numbers you are given.', ...chaosAgent },
    {
      name: LEAD_AGENT,
      instructions: 'Add the numbers you are given; hand parts to your helper.',
      ...chaosAgent,
      subagents: [HELPER_AGENT],
    },
    { name: HELPER_AGENT, instructions: 'Add the numbers of the task you are given.', ...chaosAgent },
  ];
  const sideEffects = await startSideEffectServer();
  // Each worker process has its own name, so a side effect is tied to the process that performed it.
  let spawned = 0;
  const deaths: WorkerDeath[] = [];
  const stopped: StoppedWorker[] = [];
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
  const counts = { kills: 0, terms: 0, restarts: 0, aborts: 0, midMcpCall: 0, midChild: 0 };
  let finished = false;
  let serverDown = false;
  const outages: ServerOutage[] = [];
  // The MCP server processes of each worker, read just before it is stopped.
  const mcpProcesses: number[] = [];

  // Infrastructure faults are tied to progress, not to the clock, so they land while runs are in
  // flight whatever the machine's speed: each fires once the model has received a given number of
  // requests, spread over the first 70% of the fewest requests the runs can make.
  const fewestRequests = (key: string): number =>
    model.plan(key).steps.length + 1 + model.childKeys(key).reduce((total, child) => total + fewestRequests(child), 0);
  const minimumRequests = Array.from({ length: options.runs }, (_, index) => fewestRequests(`run${index}`)).reduce(
    (a, b) => a + b,
    0,
  );
  // Every third SIGKILL and SIGTERM (the first of each, ...) waits for a call of the non-idempotent MCP
  // tool in flight and stops the worker whose server runs it (see midMcpCall).
  // The second of each (the fifth, ...) waits for a sub-agent run in flight and stops the worker that runs
  // it (see midChild).
  const plannedFaults: Array<{
    at: number;
    kind: 'SIGKILL' | 'SIGTERM' | 'restart';
    midMcpCall?: boolean;
    midChild?: boolean;
  }> = [
    ...Array.from({ length: Math.max(1, Math.ceil(options.runs / 4)) }, (_, nth) => ({
      kind: 'SIGKILL' as const,
      midMcpCall: nth % 3 === 0,
      midChild: nth % 3 === 1,
    })),
    ...Array.from({ length: Math.max(1, Math.ceil(options.runs / 10)) }, (_, nth) => ({
      kind: 'SIGTERM' as const,
      midMcpCall: nth % 3 === 0,
      midChild: nth % 3 === 1,
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
  /**
   * The slot of a worker that is up and ran the latest workflow task of a sub-agent run in flight that is
   * past its first model call and batch (so a stop lands in the middle of a child's work, some of it
   * finished: the child replays elsewhere, its caller too when it was on that worker).
   */
  const childWorker = async (): Promise<number | undefined> => {
    const running: string[] = [];
    for await (const execution of client.temporal.workflow.list({ query: `ExecutionStatus = 'Running'` }))
      if (execution.workflowId.includes(`::${HELPER_AGENT}::`)) running.push(execution.workflowId);
    for (const id of running) {
      const key = childKeyOfId(id);
      const requests = key !== undefined ? (model.requests.get(key) ?? []) : [];
      if (!requests.some((request) => request.messages > requests[0]!.messages)) continue;
      const events = (await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
      const identity = events.filter((event) => Number(event.eventType) === 6).at(-1)
        ?.workflowTaskStartedEventAttributes?.identity;
      const pid = Number(/^(\d+)@/.exec(identity ?? '')?.[1]);
      const slot = workers.findIndex(
        (worker) => worker !== null && worker.child.pid !== undefined && processTree(worker.child.pid).includes(pid),
      );
      if (slot >= 0) return slot;
    }
    return undefined;
  };
  /** Waits (up to MID_CALL_WAIT_MS, or until the runs are over) for a worker running a child in flight. */
  const midChild = async (): Promise<number | undefined> => {
    const deadline = Date.now() + MID_CALL_WAIT_MS;
    while (!finished && !serverDown && Date.now() < deadline) {
      const slot = await childWorker().catch(() => undefined);
      if (slot !== undefined) return slot;
      await new Promise((resolve) => setTimeout(resolve, 200));
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
        log(`chaos: restarting the Temporal server (request ${model.requestCount})`);
        serverDown = true;
        const outage = { from: Date.now(), to: Number.POSITIVE_INFINITY };
        outages.push(outage);
        await server.restart();
        outage.to = Date.now();
        serverDown = false;
        counts.restarts += 1;
        continue;
      }
      while (workers.every((worker) => worker === null)) await Promise.race(restarting);
      const paying = fault.midMcpCall ? await midMcpCall() : undefined;
      // A worker restarted meanwhile may have been stopped again: the child's must still be up.
      const childs = fault.midChild ? await midChild() : undefined;
      if (finished) break;
      const up = workers.flatMap((worker, slot) => (worker ? [slot] : []));
      // Drawn either way, so the faults after it are what they were.
      const chosen = up[Math.floor(chaosRandom() * up.length)]!;
      const slot = paying ?? (childs !== undefined && workers[childs] ? childs : undefined) ?? chosen;
      const worker = workers[slot]!;
      workers[slot] = null;
      if (paying !== undefined) counts.midMcpCall += 1;
      if (slot === childs) counts.midChild += 1;
      log(
        `chaos: ${fault.kind} worker ${slot} (request ${model.requestCount}${paying !== undefined ? ', during an MCP pay call' : ''}${slot === childs ? ', running a sub-agent run' : ''})`,
      );
      const death: WorkerDeath = { worker: workerNames.get(worker) ?? 'unknown', at: Date.now() };
      deaths.push(death);
      if (worker.child.pid !== undefined) stopped.push({ pids: processTree(worker.child.pid), at: death.at });
      mcpProcesses.push(...mcpServerProcesses(worker));
      await worker.kill(fault.kind);
      death.exited = Date.now();
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
      () =>
        client.start(
          {
            agent: isSubagentRun(index) ? LEAD_AGENT : 'chaos',
            input: `chaos run ${index}: add the numbers`,
            // Callers of sub-agents continue as new early, often while their children run: the next
            // run re-attaches to them (startChild refused, awaitAgentRun).
            ...(isSubagentRun(index) ? { continue_as_new: { max_history_events: 30 } } : {}),
          },
          { workflowId },
        ),
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
      record.abortSentAt !== null ? ` (abort sent to result ${record.closedAt - record.abortSentAt} ms)` : '';
    log(`run ${index}: ${record.result?.status ?? `error: ${record.error}`}${abortToClose}`);
  };
  const lanes = Array.from({ length: options.concurrency ?? 5 }, async () => {
    for (let index = queue.shift(); index !== undefined; index = queue.shift()) await runOne(index);
  });
  await Promise.all(lanes);
  finished = true;
  await faults;

  const checks: RunCheck[] = [];
  for (const record of records.sort((a, b) => a.index - b.index)) checks.push(await checkRun(record, model, stopped));
  for (const check of checks)
    if (check.abortToCloseMs !== null)
      log(`run ${check.index}: abort to close ${check.abortToCloseMs} ms (${check.abortPlace})`);
  // Before the workers stop: a child of an aborted run may still be ending.
  const children = await checkSubagents(records, checks, model, client);
  for (const worker of workers) {
    if (!worker) continue;
    mcpProcesses.push(...mcpServerProcesses(worker));
    await worker.kill('SIGTERM');
  }
  const serverProcessesLeft = await processesLeft(mcpProcesses);
  // Every worker and MCP server has stopped: no execution is reported from now on.
  const mcpEffects = sideEffects.effects.filter((effect) => effect.tool !== undefined);
  for (const [position, check] of checks.entries()) {
    const mcp = checkMcp(`run${records[position]!.index}`, records[position]!.result, model, mcpEffects);
    check.mcp = mcp.counts;
    check.problems.push(...mcp.problems);
  }
  for (const child of children) {
    const mcp = checkMcp(child.key, child.result, model, mcpEffects);
    child.check.mcp = mcp.counts;
    child.check.problems.push(...mcp.problems);
  }
  for (const check of checks)
    check.problems.push(
      ...check.subagents.flatMap((child) =>
        child.problems.map(
          (problem) => `sub-agent call ${child.toolCallId} (${child.workflowId ?? 'no child'}): ${problem}`,
        ),
      ),
    );
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
      // The children's MCP calls with their callers'.
      ...sumMcp([...checks.map((check) => check.mcp), ...children.map((child) => child.check.mcp)]),
      workerStopsMidCall: counts.midMcpCall,
      serverProcesses: new Set(mcpProcesses).size,
      serverProcessesLeft,
    },
    subagents: {
      ...subagentTotals(checks, (index) => model.plan(`run${index}`)),
      workerStopsMidChild: counts.midChild,
    },
    durationMs: Date.now() - started,
  };
  return { ...report, table: table(report) };
}

/** Everything the issue asks of one run, checked against what the model sent and what was accepted. */
async function checkRun(record: RunRecord, model: ChaosModel, stopped: StoppedWorker[]): Promise<RunCheck> {
  const problems: string[] = [];
  const result = record.result;
  const history = await record.handle.workflow.fetchHistory().catch(() => undefined);
  const taskFailures = workflowTaskFailures(history?.events ?? [], problems);
  let lost = 0;
  let duplicated = 0;
  let valid = false;
  if (!result) problems.push(`${record.failed ? 'failed' : 'not settled'}: ${record.error ?? 'no result'}`);
  else {
    const transcript = result.transcript;
    const checked = transcriptProblems(`run${record.index}`, result, model);
    valid = checked.valid;
    duplicated = checked.duplicated;
    problems.push(...checked.problems);
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
    // Server time, as bench:abort measures it (the client's own adds its calls' latencies).
    abortToCloseMs: result?.status === 'aborted' ? abortSignalToClose(history?.events ?? []) : null,
    abortPlace: abortPlace(record, history?.events ?? [], stopped),
    mcp: NO_MCP_CALLS,
    subagentRun: isSubagentRun(record.index),
    subagents: [],
    startsRefused: 0,
    reattachWaits: 0,
    problems,
  };
}

/**
 * Where the run stood when its abort was sent, from its history: the workflow task and the activities in
 * flight before the abort's signal, and the worker each of them started on.
 */
function abortPlace(record: RunRecord, events: HistoryEvent[], stopped: StoppedWorker[]): AbortPlace | null {
  if (record.abortSentAt === null) return null;
  if (!record.abortWithWorkerUp) return 'no worker or server up';
  const signal = events.findIndex(isAbortSignal);
  const before = signal >= 0 ? events.slice(0, signal) : events;
  const closed = new Set(
    before.flatMap((event) => {
      const attributes =
        event.activityTaskCompletedEventAttributes ??
        event.activityTaskFailedEventAttributes ??
        event.activityTaskTimedOutEventAttributes ??
        event.activityTaskCanceledEventAttributes;
      return attributes ? [String(attributes.scheduledEventId)] : [];
    }),
  );
  // An activity's started event is written when the attempt ends, so it may come after the signal.
  const inFlight = before.flatMap((event) =>
    event.activityTaskScheduledEventAttributes && !closed.has(String(event.eventId)) ? [String(event.eventId)] : [],
  );
  const identities = [
    before.filter((event) => event.workflowTaskStartedEventAttributes).at(-1)?.workflowTaskStartedEventAttributes
      ?.identity,
    ...events.flatMap((event) => {
      const started = event.activityTaskStartedEventAttributes;
      return started && inFlight.includes(String(started.scheduledEventId)) ? [started.identity] : [];
    }),
  ];
  const pids = identities.map((identity) => Number(/^(\d+)@/.exec(identity ?? '')?.[1]));
  // Stopped before the run closed: before the abort, or while the abort was under way.
  const held = stopped.some(
    (worker) => worker.at <= (record.closedAt ?? Infinity) && pids.some((pid) => worker.pids.includes(pid)),
  );
  return held ? 'held by a stopped worker' : 'worker up';
}

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** A child as checkSubagents found it: its check, its key (its plan's) and its result, for checkMcp. */
interface ChildRecord {
  check: SubagentCheck;
  key: string;
  result: AgentRunResult | null;
}

async function listExecutions(temporal: Client): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of temporal.workflow.list()) found.push(execution);
  return found;
}

/** The histories of a chain's runs, in the order they started (event ids count from 1 in each). */
async function historiesOf(temporal: Client, runs: readonly WorkflowExecutionInfo[]): Promise<HistoryEvent[][]> {
  return Promise.all(
    runs.map(async (run) => (await temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory()).events ?? []),
  );
}

/**
 * The attempts of each LLM call (activity `llmPhase`) of one history, in the order they were scheduled:
 * the attempt its last ActivityTaskStarted records (null when it never started). The activity makes one
 * request per attempt (Temporal is its one retry layer).
 */
function llmAttempts(events: readonly HistoryEvent[]): Array<number | null> {
  const started = new Map<string, number>();
  for (const event of events)
    if (Number(event.eventType) === 11)
      started.set(
        String(event.activityTaskStartedEventAttributes?.scheduledEventId),
        event.activityTaskStartedEventAttributes?.attempt ?? 0,
      );
  return events
    .filter(
      (event) =>
        Number(event.eventType) === 10 && event.activityTaskScheduledEventAttributes?.activityType?.name === 'llmPhase',
    )
    .map((event) => started.get(String(event.eventId)) ?? null);
}

/**
 * Every sub-agent call in the runs' transcripts against the child it started, found by listing the
 * workflow executions (so a second start of one id shows): exactly one start, a result in the caller
 * that matches how the child ended, a valid transcript, and model requests the child's own LLM attempts
 * account for, never one at an earlier state than before or after the child closed (finished work done
 * again). Also counts how the callers' chains reached children they had started before. Children of
 * aborted runs are abandoned and end by their own abort: this waits for every execution to close.
 */
async function checkSubagents(
  records: readonly RunRecord[],
  checks: readonly RunCheck[],
  model: ChaosModel,
  client: PatchloopClient,
): Promise<ChildRecord[]> {
  const temporal = client.temporal;
  const deadline = Date.now() + 120_000;
  let executions = await persistently(() => listExecutions(temporal), deadline);
  while (executions.some((execution) => execution.status.name === 'RUNNING') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    executions = await persistently(() => listExecutions(temporal), deadline);
  }
  const byId = new Map<string, WorkflowExecutionInfo[]>();
  for (const execution of executions)
    byId.set(execution.workflowId, [...(byId.get(execution.workflowId) ?? []), execution]);
  for (const runs of byId.values()) runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const children: ChildRecord[] = [];
  for (const [position, record] of records.entries()) {
    const check = checks[position]!;
    const parentId = record.handle.workflowId;
    // `<parent id>::<chain>::chaos_helper::<iteration>::<call id>`
    const childOf = new RegExp(`^${parentId}::[0-9a-f]{8}::${HELPER_AGENT}::\\d+::(.+)$`);
    const childIds = [...byId.keys()].filter((id) => childOf.test(id));
    if (!check.subagentRun && childIds.length === 0) continue;
    const parentEvents = (await historiesOf(temporal, byId.get(parentId) ?? [])).flat();
    check.startsRefused = parentEvents.filter((event) => Number(event.eventType) === 30).length;
    check.reattachWaits = parentEvents.filter(
      (event) =>
        Number(event.eventType) === 10 &&
        event.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitAgentRun',
    ).length;
    const transcript = record.result?.transcript ?? [];
    const calls = transcript.flatMap((message) =>
      message['role'] === 'assistant' && Array.isArray(message['tool_calls'])
        ? (message['tool_calls'] as Array<{ id: string; function: { name: string; arguments: string } }>).filter(
            (call) => call.function.name === SUBAGENT_TOOL,
          )
        : [],
    );
    const matched = new Set<string>();
    for (const call of calls) {
      const problems: string[] = [];
      const sent: SentCall = { name: call.function.name, arguments: call.function.arguments };
      const key = childKeyOf(sent.arguments) ?? '?';
      const results = transcript.filter((message) => message['role'] === 'tool' && message['tool_call_id'] === call.id);
      if (results.length !== 1) problems.push(`${results.length} results for the call in its caller's transcript`);
      const content = String(results[0]?.['content'] ?? '');
      const error = subagentError(sent, content);
      const resultKind: SubagentCheck['result'] =
        content === expectedResult(sent)
          ? 'answer'
          : error !== undefined
            ? 'error'
            : content === toolCancelledContent(SUBAGENT_TOOL, 'chaos abort')
              ? 'cancelled'
              : 'other';
      const ids = childIds.filter((id) => childOf.exec(id)?.[1] === call.id);
      for (const id of ids) matched.add(id);
      if (ids.length > 1) problems.push(`${ids.length} child runs for one call: ${ids.join(', ')}`);
      const id = ids[0] ?? null;
      const runs = id ? byId.get(id)! : [];
      const starts = runs.filter((run) => run.status.name !== 'CONTINUED_AS_NEW').length;
      if (id && starts !== 1)
        problems.push(
          `child ${id} was started ${starts} times: ${runs.map((run) => `${run.runId} ${run.status.name}`).join(', ')}`,
        );
      let childResult: AgentRunResult | null = null;
      let status = 'not started';
      if (id) {
        try {
          let timer: NodeJS.Timeout | undefined;
          childResult = await Promise.race([
            persistently(
              () => client.run(id).result(),
              deadline,
              (failure) => (failure as Error).name === 'RunFailedError',
            ),
            new Promise<never>((_resolve, reject) => {
              timer = setTimeout(() => reject(new ChildNotSettled()), Math.max(0, deadline - Date.now()));
            }),
          ]).finally(() => clearTimeout(timer));
          status = childResult.status;
          // A child's result leaves its transcript out (its caller uses only the answer): the query reads it.
          if (childResult.transcript_omitted) {
            const transcript = await persistently(() => client.run(id).transcript(), deadline);
            if (transcript.length !== childResult.transcript_length)
              problems.push(
                `the child's result says ${childResult.transcript_length} messages, its transcript query ${transcript.length}`,
              );
            childResult = { ...childResult, transcript };
          }
        } catch (failure) {
          status = failure instanceof ChildNotSettled ? 'running' : 'failed';
          problems.push(
            failure instanceof ChildNotSettled
              ? 'the child did not settle in 2 minutes after its caller'
              : `the child failed: ${(failure as Error).message}`,
          );
        }
      }
      // The caller's result says how the child ended; a cancellation only when the caller was aborted.
      const callerAborted = record.result?.status === 'aborted';
      const cancelled = resultKind === 'cancelled' && callerAborted;
      const consistent =
        status === 'completed'
          ? resultKind === 'answer' || cancelled
          : status === 'not started'
            ? cancelled
            : error === status || cancelled;
      if (!consistent)
        problems.push(
          `its caller's result (${resultKind}: ${content.slice(0, 160)}) does not say how the child ended (${status})`,
        );
      let valid = false;
      if (childResult) {
        const checked = transcriptProblems(key, childResult, model);
        valid = checked.valid && checked.duplicated === 0;
        problems.push(...checked.problems);
        if (checked.duplicated > 0) problems.push(`${checked.duplicated} message(s) twice in the child's transcript`);
      }
      const histories = await historiesOf(temporal, runs);
      let workflowTaskFailuresSeen = 0;
      for (const events of histories) workflowTaskFailuresSeen += workflowTaskFailures(events, problems);
      const attempts = histories.flatMap(llmAttempts);
      const workerIdentities = new Set(
        histories
          .flat()
          .filter((event) => Number(event.eventType) === 6)
          .map((event) => event.workflowTaskStartedEventAttributes?.identity),
      );
      // The model's requests for the child, by state (how many messages they held): a state seen again is
      // a retry; one before a state already seen, or any after the child closed, is finished work again.
      const requests = model.requests.get(key) ?? [];
      const closedAt = runs.at(-1)?.closeTime?.getTime();
      const states: number[] = [];
      const byState = new Map<number, ModelRequest[]>();
      let restarted = 0;
      let resentAfterFault = 0;
      let resentOtherwise = 0;
      for (const request of requests) {
        const latest = states.at(-1);
        if (latest !== undefined && request.messages < latest) {
          restarted += 1;
          problems.push(`a model request of ${request.messages} messages after one of ${latest}: finished work again`);
        }
        if (closedAt !== undefined && request.at > closedAt) {
          restarted += 1;
          problems.push(`a model request ${request.at - closedAt} ms after the child closed`);
        }
        const before = byState.get(request.messages);
        if (before) {
          if (before.at(-1)!.faulted) resentAfterFault += 1;
          else resentOtherwise += 1;
          before.push(request);
        } else {
          byState.set(request.messages, [request]);
          if (latest === undefined || request.messages > latest) states.push(request.messages);
        }
      }
      if (states.length > attempts.length)
        problems.push(
          `the model got requests at ${states.length} states, but the child's histories hold ${attempts.length} LLM calls`,
        );
      let unrecorded = 0;
      for (const [step, state] of states.entries()) {
        const made = attempts[step];
        const got = byState.get(state)!.length;
        if (made === null) {
          // Its last attempt never started: cancelled (an abort) while waiting to retry, so the history
          // records no attempt. Only an aborted child may have such a call.
          unrecorded += got;
          if (status !== 'aborted')
            problems.push(`the child's LLM call ${step + 1} has no recorded attempt, but the child was not aborted`);
        } else if (made !== undefined && got > made)
          problems.push(
            `the model got ${got} requests for the child's LLM call ${step + 1}, which made ${made} attempt(s)`,
          );
      }
      const childTranscript = childResult?.transcript ?? [];
      const childCheck: SubagentCheck = {
        index: record.index,
        toolCallId: call.id,
        workflowId: id,
        starts,
        status,
        valid,
        result: resultKind,
        modelRequests: requests.length,
        llmAttempts: attempts.reduce<number>((total, made) => total + (made ?? 0), 0),
        unrecordedRequests: unrecorded,
        workers: workerIdentities.size,
        resentAfterFault,
        resentOtherwise,
        restarted,
        charges: childTranscript.filter(
          (message) => message['role'] === 'tool' && sentName(model, key, message) === 'charge',
        ).length,
        mcp: NO_MCP_CALLS,
        workflowTaskFailures: workflowTaskFailuresSeen,
        problems,
      };
      check.subagents.push(childCheck);
      children.push({ check: childCheck, key, result: childResult });
    }
    for (const id of childIds)
      if (!matched.has(id)) check.problems.push(`child run ${id} was started for a call its transcript does not hold`);
  }
  return children;
}

class ChildNotSettled extends Error {
  override readonly name = 'ChildNotSettled';
}

/** The tool a transcript's tool result answers, as the model sent the call (by its id) to the run of `key`. */
function sentName(model: ChaosModel, key: string, message: Message): string | undefined {
  return model.sentCalls.get(key)?.get(String(message['tool_call_id']))?.name;
}

/**
 * The workflow task failures of a history; those of any cause but 1 (UNHANDLED_COMMAND, benign and
 * expected) are problems.
 */
function workflowTaskFailures(events: readonly HistoryEvent[], problems: string[]): number {
  // EVENT_TYPE_WORKFLOW_TASK_FAILED; its cause says why.
  const failures = events.filter((event) => Number(event.eventType) === 9);
  const causes = failures.map((event) => Number(event.workflowTaskFailedEventAttributes?.cause ?? 0));
  if (causes.some((cause) => cause !== 1)) {
    const messages = failures.map((event) => event.workflowTaskFailedEventAttributes?.failure?.message ?? '?');
    problems.push(`workflow task failures with causes ${causes.join(', ')}: ${messages.join(' | ').slice(0, 2000)}`);
  }
  return failures.length;
}

/**
 * A run's or a child's transcript against what the model sent it (by its key): tool linkage, the system
 * message first, every message one the model sent whole (or a result its tool really gives), no message
 * twice.
 */
function transcriptProblems(
  key: string,
  result: AgentRunResult,
  model: ChaosModel,
): { valid: boolean; duplicated: number; problems: string[] } {
  const problems: string[] = [];
  const transcript = result.transcript;
  let valid = true;
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
  const texts = model.sentTexts.get(key) ?? new Set<string>();
  const calls = model.sentCalls.get(key) ?? new Map<string, SentCall>();
  const aborted = result.status === 'aborted';
  for (const [position, message] of transcript.entries()) {
    const problem = messageProblem(message, position === transcript.length - 1, aborted, { texts, calls, transcript });
    if (problem) {
      valid = false;
      problems.push(problem);
    }
  }
  const seen = transcript.map((message) => JSON.stringify(message));
  return { valid, duplicated: seen.length - new Set(seen).size, problems };
}

const NO_MCP_CALLS: McpCounts = { pay: 0, quote: 0, executed: 0, interrupted: 0, duplicates: 0, resent: 0 };

function subagentTotals(checks: readonly RunCheck[], plan: (index: number) => RunPlan): SubagentTotals {
  const children = checks.flatMap((check) => check.subagents);
  const count = (predicate: (child: SubagentCheck) => boolean) => children.filter(predicate).length;
  const sum = (value: (child: SubagentCheck) => number) => children.reduce((total, child) => total + value(child), 0);
  return {
    runs: checks.filter((check) => check.subagentRun).length,
    calls: children.length,
    // Planned batches that call two children at once, in the runs that got as far as calling them.
    twoAtOnce: checks
      .filter((check) => check.subagentRun)
      .flatMap((check) =>
        plan(check.index).steps.filter(
          (calls) =>
            calls.filter((call) => call.name === SUBAGENT_TOOL).length > 1 &&
            calls.some((call) => check.subagents.some((child) => child.toolCallId === call.id)),
        ),
      ).length,
    startedOnce: count((child) => child.starts === 1),
    startedTwice: count((child) => child.starts > 1),
    notStarted: count((child) => child.starts === 0),
    completed: count((child) => child.status === 'completed'),
    aborted: count((child) => child.status === 'aborted'),
    failed: count((child) => child.status === 'failed'),
    valid: count((child) => child.valid),
    answered: count((child) => child.result === 'answer'),
    errors: count((child) => child.result === 'error'),
    cancelled: count((child) => child.result === 'cancelled'),
    modelRequests: sum((child) => child.modelRequests),
    llmAttempts: sum((child) => child.llmAttempts),
    unrecordedRequests: sum((child) => child.unrecordedRequests),
    replayedElsewhere: count((child) => child.workers > 1),
    resentAfterFault: sum((child) => child.resentAfterFault),
    resentOtherwise: sum((child) => child.resentOtherwise),
    restarted: sum((child) => child.restarted),
    startsRefused: checks.reduce((total, check) => total + check.startsRefused, 0),
    reattachWaits: checks.reduce((total, check) => total + check.reattachWaits, 0),
    charges: sum((child) => child.charges),
    mcp: sumMcp(children.map((child) => child.mcp)),
  };
}

function sumMcp(counts: McpCounts[]): McpCounts {
  const total = { ...NO_MCP_CALLS };
  for (const count of counts) for (const key of Object.keys(total) as Array<keyof McpCounts>) total[key] += count[key];
  return total;
}

/**
 * A run's or a child's MCP calls against what the Python server reported executing (its labels start
 * with its key, `run<index>-` or `run<index>/<call id>-`): a `shop_pay` call ran at most once, and exactly once when the model got its result; a
 * `shop_quote` result was really computed; nothing ran for a call the transcript does not hold. The
 * content of each result (the real one, the interrupted-call error, or cancelled by an abort) is
 * checked with the rest of the transcript (messageProblem).
 */
function checkMcp(
  runKey: string,
  result: AgentRunResult | null,
  model: ChaosModel,
  effects: readonly SideEffect[],
): { counts: McpCounts; problems: string[] } {
  const counts = { ...NO_MCP_CALLS };
  const problems: string[] = [];
  const executions = new Map<string, { tool: string; starts: number; ends: number }>();
  for (const effect of effects) {
    if (!effect.label.startsWith(`${runKey}-`)) continue;
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
  const transcript = result?.transcript ?? [];
  const sent = model.sentCalls.get(runKey) ?? new Map<string, SentCall>();
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
    if (!inTranscript.has(key) && result)
      problems.push(`MCP call ${key} executed on the server, but no result for it is in the transcript`);
  return { counts, problems };
}

/** The MCP server processes (support/python_mcp_server.py) a worker started, as they are now. */
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
  sent: { texts: Set<string>; calls: Map<string, SentCall>; transcript: Message[] },
): string | null {
  const { texts, calls, transcript } = sent;
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
    // A sub-agent call whose child did not complete: a well-formed error result that says which (checked
    // against how the child really ended by checkSubagents).
    if (tool === SUBAGENT_TOOL && subagentError(sent, content) !== undefined) return null;
    if (aborted && content === toolCancelledContent(tool, 'chaos abort')) return null;
    // A non-idempotent MCP call the abort left running: its cancellation says it may still take effect.
    if (aborted && tool === MCP_PAY && content === abortedMcpContent(tool)) return null;
    return `tool ${id} answered ${content.slice(0, 80)}, not ${expected} for ${tool} ${sent.arguments}`;
  }
  if (role === 'user' || role === 'system') return null;
  return `unexpected message role ${String(role)} at ${transcript.indexOf(message)}`;
}

/**
 * How a sub-agent call's error result says its child ended (`failed`, `aborted`, `budget_exhausted`), when
 * it is one, exactly as the workflow writes it; otherwise undefined.
 */
function subagentError(call: SentCall, content: string): 'failed' | 'aborted' | 'budget_exhausted' | undefined {
  let error: unknown;
  try {
    error = (JSON.parse(content) as { error?: unknown }).error;
  } catch {
    return undefined;
  }
  const prefix = `Tool '${call.name}' failed during execution or result parsing with arguments ${call.arguments}: `;
  if (typeof error !== 'string' || !error.startsWith(prefix)) return undefined;
  if (toolFailureContent(call.name, call.arguments, error.slice(prefix.length)) !== content) return undefined;
  const said = error.slice(prefix.length);
  if (said.startsWith(`the ${HELPER_AGENT} agent's run failed: `)) return 'failed';
  if (said.startsWith(`the ${HELPER_AGENT} agent's run was aborted`)) return 'aborted';
  if (said.startsWith(`the ${HELPER_AGENT} agent's run ran out of budget`)) return 'budget_exhausted';
  return undefined;
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
    case SUBAGENT_TOOL:
      return serializeToolResult(childFinalText(childKeyOf(call.arguments) ?? '?').join(''));
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
  const sub = report.subagents;
  const children = runs.flatMap((run) => run.subagents);
  const count = (predicate: (run: RunCheck) => boolean) => runs.filter(predicate).length;
  const latencies = (place: AbortPlace) =>
    runs.flatMap((run) => (run.abortToCloseMs !== null && run.abortPlace === place ? [run.abortToCloseMs] : []));
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
    `MCP tools (Python stdio server, executions counted outside the workers; children's calls included): ${mcp.pay + mcp.quote} calls; ${MCP_PAY} (not idempotent) ${mcp.pay} calls, ${mcp.executed} executed, ${mcp.interrupted} interrupted (the model was told it may or may not have taken effect), ${mcp.duplicates} executed twice; ${MCP_QUOTE} (readOnlyHint) ${mcp.quote} calls, ${mcp.resent} sent again after a crash; ${mcp.workerStopsMidCall} worker stops during a ${MCP_PAY} call; ${mcp.serverProcesses} server processes, ${mcp.serverProcessesLeft} left running after their worker stopped`,
    '',
    '| runs | settled | valid | lost | duplicated | stuck | workflow task failures | MCP calls / interrupted / duplicated | abort-to-close p50 / p95, a worker up | held by a stopped worker | no worker or server up |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${runs.length} | ${count((run) => run.settled)} | ${count((run) => run.valid)} | ${runs.reduce((total, run) => total + run.lost, 0)} | ${runs.reduce((total, run) => total + run.duplicated, 0)} | ${count((run) => run.stuck)} | ${runs.reduce((total, run) => total + run.workflowTaskFailures, 0)} | ${mcp.pay + mcp.quote} / ${mcp.interrupted} / ${mcp.duplicates} | ${spread(latencies('worker up'))} | ${spread(latencies('held by a stopped worker'))} | ${spread(latencies('no worker or server up'))} |`,
    '',
    `sub-agents: ${sub.runs} runs of ${LEAD_AGENT} made ${sub.calls} calls of ${HELPER_AGENT} (${sub.twoAtOnce} batches called two at once); children started once ${sub.startedOnce}, more than once ${sub.startedTwice}, never (the call was cancelled first) ${sub.notStarted}; children completed ${sub.completed}, aborted ${sub.aborted}, failed ${sub.failed}; callers' results: the answer ${sub.answered}, an error ${sub.errors}, cancelled ${sub.cancelled}; callers reaching a child they had started: startChild refused ${sub.startsRefused}, awaitAgentRun ${sub.reattachWaits}; ${sub.workerStopsMidChild} worker stops on the worker running a child in flight; ${sub.replayedElsewhere} children ran on more than one worker process`,
    `children's model requests ${sub.modelRequests} for ${sub.llmAttempts} LLM attempts in their histories, besides ${sub.unrecordedRequests} of LLM calls an abort cancelled while they waited to retry (no attempt recorded) (sent again after a broken reply ${sub.resentAfterFault}, after a worker stop, an outage or a timeout ${sub.resentOtherwise}); finished work done again ${sub.restarted}; side effects inside children: ${sub.charges} charge calls, ${MCP_PAY} ${sub.mcp.pay} calls (${sub.mcp.executed} executed, ${sub.mcp.duplicates} executed twice), ${MCP_QUOTE} ${sub.mcp.quote} calls`,
    '',
    '| sub-agent runs | sub-agent calls | children started once | settled | valid | caller got the answer / error / cancelled | child model requests / LLM attempts (+ unrecorded, aborted) | finished child work done again | workflow task failures |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${sub.runs} | ${sub.calls} | ${sub.startedOnce} | ${children.filter((child) => child.status !== 'not started' && child.status !== 'running').length} | ${sub.valid} | ${sub.answered} / ${sub.errors} / ${sub.cancelled} | ${sub.modelRequests} / ${sub.llmAttempts} + ${sub.unrecordedRequests} | ${sub.restarted} | ${children.reduce((total, child) => total + child.workflowTaskFailures, 0)} |`,
    ...runs
      .filter((run) => run.problems.length > 0)
      .map((run) => `run ${run.index} (${run.workflowId}): ${run.problems.join('; ')}`),
  ].join('\n');
}
