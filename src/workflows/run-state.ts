import type { CancellationScope, ChildWorkflowHandle } from '@temporalio/workflow';
import { compileContext, type Message, type Mutation, type SelfRefSnapshot } from '../context';
import { emptySelfRefQueue, type RunEvent, type RunEventBody, type RunState, type SelfRefQueue, type TokenUsage } from '../runtime';

/** A message waiting for its turn; `id` lets a `send` update wait for the reply to exactly its message. */
export interface InboxEntry {
  id: number;
  content: string;
}

/**
 * The durable state of a run or session (spec 7.1), rebuilt identically on replay from recorded phase
 * results and signals.
 */
export interface Run {
  agent: string;
  /** The SelfRef context this run works on: its workflow id (a fork child's id is its fork key). */
  memoryKey: string;
  selfref: boolean;
  transcript: Message[];
  snapshot: SelfRefSnapshot | null;
  pending: Mutation[];
  inbox: InboxEntry[];
  nextInboxId: number;
  selfrefQueue: SelfRefQueue;
  /** Global across turns and continue-as-new: idempotency keys depend on it. */
  iteration: number;
  llmCalls: number;
  toolCalls: number;
  usage: TokenUsage | null;
  abort: { requested: boolean; reason: string };
  phase: CancellationScope | null;
  children: Map<string, ChildWorkflowHandle<never>>;
  /** Abort signals sent to fork children; awaited before the run ends, or the server drops them. */
  childSignals: Array<Promise<void>>;
  forkCount: number;
  forkDepth: number;
  forkId: string | null;
  request: { digest: string; text: string } | null;
  events: RunEvent[];
  /** Events emitted by earlier runs of this workflow id (before continue-as-new). */
  eventSeqBase: number;
  state: RunState;
}

export function newRun(agent: string, memoryKey: string): Run {
  return {
    agent,
    memoryKey,
    selfref: false,
    transcript: [],
    snapshot: null,
    pending: [],
    inbox: [],
    nextInboxId: 1,
    selfrefQueue: emptySelfRefQueue(),
    iteration: 0,
    llmCalls: 0,
    toolCalls: 0,
    usage: null,
    abort: { requested: false, reason: '' },
    phase: null,
    children: new Map(),
    childSignals: [],
    forkCount: 0,
    forkDepth: 0,
    forkId: null,
    request: null,
    events: [],
    eventSeqBase: 0,
    state: 'running',
  };
}

/** Folds patches into the durable transcript (spec 4.6). Throws `ContextError` on invalid linkage. */
export function commit(run: Run, mutations: readonly Mutation[]): void {
  // Nothing to fold and the snapshot already reflects the transcript: skip the O(transcript) copy.
  const snapshotCurrent = (run.snapshot !== null) === run.selfref;
  if (mutations.length === 0 && snapshotCurrent) return;
  const next = compileContext(run.transcript, mutations, run.selfref);
  run.transcript = next.transcript;
  run.snapshot = next.selfref_snapshot;
}

export function emit(run: Run, body: RunEventBody, iteration = run.iteration): void {
  // Date.now() in a workflow is the task's start time from history: deterministic under replay.
  run.events.push({ ...body, seq: run.eventSeqBase + run.events.length + 1, run_id: run.memoryKey, iteration, timestamp: new Date(Date.now()).toISOString() });
}

/**
 * Spec 8.1: the first non-empty reason is kept; aborting again is harmless; with nothing running it does
 * nothing. Running fork children are aborted with the same reason (6.6).
 */
export function requestAbort(run: Run, reason: unknown): void {
  if (run.state !== 'running') return;
  if (typeof reason === 'string' && reason !== '' && run.abort.reason === '') run.abort.reason = reason;
  run.abort.requested = true;
  run.phase?.cancel();
  for (const child of run.children.values()) abortChild(run, child);
}

export function abortChild(run: Run, child: ChildWorkflowHandle<never>): void {
  run.childSignals.push(child.signal('abort', { reason: run.abort.reason }).catch(() => undefined));
}

/** A signal still being delivered when the workflow closes is dropped: wait for them. */
export async function deliverChildSignals(run: Run): Promise<void> {
  while (run.childSignals.length > 0) await Promise.all(run.childSignals.splice(0));
}

export function enqueueMessage(run: Run, content: string): InboxEntry {
  const entry = { id: run.nextInboxId, content };
  run.nextInboxId += 1;
  run.inbox.push(entry);
  emit(run, { event_type: 'user_message_received', content });
  return entry;
}

export function userMessageMutation(content: string): Mutation {
  return { type: 'UserMessageMutation', message: { role: 'user', content } };
}
