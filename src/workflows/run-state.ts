import type { CancellationScope } from '@temporalio/workflow';
import { compileContext, type Message, type Mutation, type SelfRefSnapshot } from '../context';
import type { RunEvent, RunEventBody, RunState, TokenUsage } from '../runtime';

/** The durable state of one run (spec 7.1): rebuilt identically on replay from recorded phase results. */
export interface Run {
  agent: string;
  selfref: boolean;
  transcript: Message[];
  snapshot: SelfRefSnapshot | null;
  pending: Mutation[];
  inbox: string[];
  iteration: number;
  llmCalls: number;
  toolCalls: number;
  usage: TokenUsage | null;
  abort: { requested: boolean; reason: string };
  phase: CancellationScope | null;
  request: { digest: string; text: string } | null;
  events: RunEvent[];
  state: RunState;
}

export function newRun(agent: string): Run {
  return {
    agent,
    selfref: false,
    transcript: [],
    snapshot: null,
    pending: [],
    inbox: [],
    iteration: 0,
    llmCalls: 0,
    toolCalls: 0,
    usage: null,
    abort: { requested: false, reason: '' },
    phase: null,
    request: null,
    events: [],
    state: 'running',
  };
}

/** Folds patches into the durable transcript (spec 4.6). Throws `ContextError` on invalid linkage. */
export function commit(run: Run, mutations: readonly Mutation[]): void {
  const next = compileContext(run.transcript, mutations, run.selfref);
  run.transcript = next.transcript;
  run.snapshot = next.selfref_snapshot;
}

export function emit(run: Run, body: RunEventBody, iteration = run.iteration): void {
  // Date.now() in a workflow is the task's start time from history: deterministic under replay.
  run.events.push({ ...body, seq: run.events.length + 1, iteration, timestamp: new Date(Date.now()).toISOString() });
}

/** Spec 8.1: the first non-empty reason is kept; aborting again is harmless; after the end it does nothing. */
export function requestAbort(run: Run, reason: unknown): void {
  if (run.state !== 'running') return;
  if (typeof reason === 'string' && reason !== '' && run.abort.reason === '') run.abort.reason = reason;
  run.abort.requested = true;
  run.phase?.cancel();
}

/** The `collect_context_mutations` hook of user messages (spec 7.7): queued text becomes patches. */
export function collectUserMessages(run: Run): Mutation[] {
  return run.inbox.splice(0).map((content) => ({ type: 'UserMessageMutation', message: { role: 'user', content } }));
}
