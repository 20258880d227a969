import { patched, workflowInfo, type CancellationScope, type ExternalWorkflowHandle } from '@temporalio/workflow';
import { compileContext, type Message, type Mutation, type SelfRefSnapshot } from '../../context';
import { sinks } from '../sinks';
import {
  checkUserMessage,
  DEFAULT_MESSAGE_LIMITS,
  readableLimitBytes,
  RequestWriter,
  BudgetSettings,
  NO_BOUNDS,
  type BudgetLimit,
  ContextSettings,
  utf8Bytes,
  PROTOCOL_VERSION,
  type ApprovalRecord,
  type PendingApproval,
  type MessageLimits,
  type LoggedRunEvent,
  type RunEvent,
  type RunEventBody,
  type RunOrigin,
  type ReportedState,
  type RunState,
  type UnprocessedMessage,
  DurableRun,
  isUndecided,
  type AgentSpec,
  type WaitSettings,
  stageChecksFor,
} from '../../runtime';

/** A message waiting for its turn; `id` lets a `send` update wait for the reply to exactly its message. */
export type InboxEntry = DurableRun['inbox'][number];

/**
 * A run or session as its workflow holds it (spec 7.1), in four parts: what it carries across
 * continue-as-new as it is (`durable`), what it takes from its input and agent when it opens
 * (`settings`), this run's own state and handles, which a continued run begins anew (`live`), and caches
 * derived from the durable part (`derived`, recomputed by `refreshDerived`). All of it is rebuilt
 * identically on replay from recorded phase results and signals.
 */
export interface Run {
  /** Carried across continue-as-new as it is (`DurableRun`: its schema is the carried one). */
  durable: DurableRun;
  settings: RunSettings;
  live: LiveRun;
  derived: DerivedRun;
}

/** What a run takes from its input and its agent: the same in every run of a chain. */
interface RunSettings {
  /** The active agent's name. */
  agent: string;
  /** The SelfRef context this run works on: its workflow id (a fork child's id is its fork key). */
  memoryKey: string;
  selfref: boolean;
  /** The agent's limits once it is resolved; the defaults until then. */
  messageLimits: MessageLimits;
  /** False for workflows that take no user messages (typed functions). */
  acceptsMessages: boolean;
  /** The run's context settings: its agent's with its own override (set when the run opens). */
  contextSettings: ContextSettings;
  /** The run's budget: its agent's with its own override. */
  budget: BudgetSettings;
  /**
   * The most JSON its result or a transcript page may hold and still travel inline, readable by any
   * client (`readableLimitBytes` of its agent, set when the run opens).
   */
  readableBytes: number;
  /** The origin fields of this run's events (spec 7.8), from its workflow info and fork input. */
  origin: RunOrigin;
  forkDepth: number;
  forkId: string | null;
  /** How deep in a call tree of sub-agents the run is (a top-level run: 0). */
  agentDepth: number;
  /** The principal the run was started for (the gateway's callers), which its children inherit; or null. */
  principal: string | null;
  /** The active agent's `waits` (null: none); absent until the run has opened with its agent. */
  waits?: WaitSettings | null;
  /** The active agent checks user messages (input guardrails): they are logged without their text. */
  screensInput?: boolean;
}

/** A wait in progress (`sleep`, `wait_for_event`), as `status` reports it. */
export interface WaitInProgress {
  tool_call_id: string;
  tool: 'sleep' | 'wait_for_event';
  /** When it ends at the latest (ISO time). */
  wake_at: string;
  event?: string;
  reason?: string;
}

/** This run's own state and handles: a run continued as new begins them anew. */
interface LiveRun {
  abort: { requested: boolean; reason: string };
  state: RunState;
  phase: CancellationScope | null;
  /** Running child runs (forks and sub-agents) by workflow id: an abort reaches each as a signal. */
  children: Map<string, ChildRun>;
  /** Abort signals sent to child runs; awaited before the run ends, or the server drops them. */
  childSignals: Array<Promise<void>>;
  /** The request of the LLM phase in flight, for the activity to load by query (`stable`: see RequestText). */
  request: { digest: string; text: string; stable: number; messagesAt: number; llmCall: number } | null;
  /** Writes and hashes each request from where the previous one's messages ended. */
  requestWriter: RequestWriter;
  /** `extend_budget` updates this run accepted: a wait for one ends when it grows. */
  budgetExtensions: number;
  /** The limits a run waiting for `extend_budget` would pass; null when it does not wait. */
  awaitingBudget: BudgetLimit[] | null;
  /** Decisions recorded by this run: a wait that saw one made progress (continue-as-new may follow). */
  approvalDecisions: number;
  /** Approval requests of the batch in flight (empty when no batch waits or ran gated calls). */
  approvals: ApprovalRecord[];
  /** Search attributes: whether the run keeps them, and what it last reported. */
  /** `onStateChange`: upserts on a change of state only (`visible-on-state-change`, decided as the run opens). */
  visibility: { enabled: boolean; state: ReportedState | null; iteration: number; onStateChange: boolean };
  /** Waits of the batch in flight (`sleep`, `wait_for_event`), in the order they began. */
  waits: WaitInProgress[];
}

/** Caches derived from the durable part, never carried: `refreshDerived` recomputes them. */
interface DerivedRun {
  /** The SelfRef snapshot of the transcript (null for a run without SelfRef). */
  snapshot: SelfRefSnapshot | null;
  /** The transcript's JSON text and digest for `transcriptPage`, kept while the transcript is this one. */
  transcriptText: { of: Message[]; text: string; digest: string } | null;
  /** The transcript as the last commit returned it (checked for linkage whole): later commits check only what they append. */
  checkedTranscript: Message[] | null;
  /** JSON characters of the events in the log's window. */
  eventChars: number;
}

/** The run's origin: the call tree from Temporal's own parent and root links, the fork's from its input. */
export function runOrigin(
  memoryKey: string,
  fork: { fork_id: string; depth: number; source_memory_key: string } | null,
): RunOrigin {
  const info = workflowInfo();
  return {
    session_id: info.root?.workflowId ?? info.workflowId,
    agent_call_id: info.workflowId,
    parent_agent_call_id: info.parent?.workflowId ?? null,
    fork_id: fork?.fork_id ?? null,
    fork_depth: fork?.depth ?? 0,
    fork_seq: null,
    selfref_instance_id: null,
    source_memory_key: fork?.source_memory_key ?? null,
    memory_key: memoryKey,
  };
}

/** An event with its origin, as queries report it (the log itself does not repeat the run's fields). */
export function withOrigin(run: Run, event: LoggedRunEvent): RunEvent {
  const tool = 'tool_call_id' in event ? { tool_name: event.tool_name, tool_call_id: event.tool_call_id } : null;
  return {
    ...event,
    protocol_version: PROTOCOL_VERSION,
    func_name: run.settings.agent,
    trace_id: run.settings.origin.agent_call_id,
    extra: {},
    origin: {
      ...run.settings.origin,
      event_seq: event.seq,
      tool_name: tool?.tool_name ?? null,
      tool_call_id: tool?.tool_call_id ?? null,
    },
  };
}

export function newRun(agent: string, memoryKey: string): Run {
  return {
    durable: DurableRun.parse({
      transcript: [],
      pending: [],
      inbox: [],
      next_inbox_id: 1,
      iteration: 0,
      llm_calls: 0,
      tool_calls: 0,
      usage: null,
      fork_count: 0,
      event_seq: 0,
    }),
    settings: {
      agent,
      memoryKey,
      selfref: false,
      messageLimits: DEFAULT_MESSAGE_LIMITS,
      acceptsMessages: true,
      contextSettings: ContextSettings.parse({}),
      // No bounds until the run opens with its agent's budget (status reports none until then).
      budget: BudgetSettings.parse(NO_BOUNDS),
      readableBytes: readableLimitBytes({}),
      origin: runOrigin(memoryKey, null),
      forkDepth: 0,
      forkId: null,
      agentDepth: 0,
      principal: null,
    },
    live: {
      abort: { requested: false, reason: '' },
      state: 'running',
      phase: null,
      children: new Map(),
      childSignals: [],
      request: null,
      requestWriter: new RequestWriter(),
      budgetExtensions: 0,
      awaitingBudget: null,
      approvalDecisions: 0,
      approvals: [],
      visibility: { enabled: false, state: null, iteration: 0, onStateChange: false },
      waits: [],
    },
    derived: { snapshot: null, transcriptText: null, checkedTranscript: null, eventChars: 0 },
  };
}

/**
 * Recomputes the caches from the durable part, after it was put back (continue-as-new, a failed turn's
 * rollback): the event log's size (and its window), and the snapshot, with the transcript checked whole.
 */
export function refreshDerived(run: Run): void {
  const events = eventLog(run);
  run.derived = {
    snapshot: null,
    transcriptText: null,
    checkedTranscript: null,
    eventChars: events.reduce((total, event) => total + JSON.stringify(event).length, 0),
  };
  keepEventWindow(run);
  commit(run, []);
}

/** The window the run measures against: its setting, else the one a provider's error stated; null: unknown. */
export function contextWindow(run: Run): number | null {
  return run.settings.contextSettings.window_tokens ?? run.durable.context.learned_window_tokens;
}

/**
 * The state queries and search attributes report: `awaiting_budget` or `awaiting_approval` while a run
 * waits for one, `waiting` while its batch holds only durable waits (and sub-agents not waiting for
 * decisions) still open.
 */
export function reportedState(run: Run): ReportedState {
  if (run.live.state !== 'running') return run.live.state;
  if (run.live.awaitingBudget) return 'awaiting_budget';
  if (run.live.approvals.some(isUndecided) || childPending(run).length > 0) return 'awaiting_approval';
  return run.live.waits.length > 0 ? 'waiting' : run.live.state;
}

/** The wait in progress that ends first (undefined: none). */
export function earliestWait(run: Run): WaitInProgress | undefined {
  return [...run.live.waits].sort((a, b) => a.wake_at.localeCompare(b.wake_at))[0];
}

/** What each running sub-agent reported waiting, by its workflow id (a child that ended is not listed). */
export function runningChildren(run: Run): Map<string, PendingApproval[]> {
  return new Map(Object.entries(run.durable.child_approvals ?? {}).filter(([child]) => run.live.children.has(child)));
}

/** Records what a sub-agent reported waiting for decisions (its latest list replaces the one before). */
export function setChildApprovals(run: Run, child: string, pending: PendingApproval[]): void {
  run.durable.child_approvals = { ...run.durable.child_approvals, [child]: pending };
}

/** Forgets what a sub-agent reported (it ended). */
export function forgetChildApprovals(run: Run, child: string): void {
  if (!run.durable.child_approvals || !(child in run.durable.child_approvals)) return;
  const { [child]: _ended, ...others } = run.durable.child_approvals;
  run.durable.child_approvals = others;
}

/** Calls of the run's running sub-agents (at any depth) that wait for decisions. */
export function childPending(run: Run): PendingApproval[] {
  return [...runningChildren(run).values()].flat();
}

/** Whether the run's transcript is the one its last commit returned (so it passed the linkage check). */
export function transcriptChecked(run: Run): boolean {
  return run.durable.transcript === run.derived.checkedTranscript;
}

/** Folds patches into the durable transcript (spec 4.6). Throws `ContextError` on invalid linkage. */
export function commit(run: Run, mutations: readonly Mutation[]): void {
  // Nothing to fold and the snapshot already reflects the transcript: skip the O(transcript) copy.
  const snapshotCurrent = (run.derived.snapshot !== null) === run.settings.selfref;
  if (mutations.length === 0 && snapshotCurrent) return;
  // The run's messages are values: the commit shares the ones it keeps instead of copying the transcript.
  const next = compileContext(run.durable.transcript, mutations, run.settings.selfref, true, transcriptChecked(run));
  run.durable.transcript = next.transcript;
  run.derived.checkedTranscript = next.transcript;
  run.derived.snapshot = next.selfref_snapshot;
}

/** The event log's window: the newest events up to these bounds stay in memory. */
const EVENT_WINDOW = { maxEvents: 2000, maxChars: 2_000_000 };

/** Event fields added after runs were recorded (spec 7.8's names of durations and errors). */
const SPEC_NAMED_FIELDS = ['execution_time', 'error_message', 'error_type', 'total_execution_time'];

export function emit(run: Run, body: RunEventBody, iteration = run.durable.iteration): void {
  // A history recorded before these fields replays with the events it had: the log's size decides
  // whether carried continue-as-new state fits inline, so it must not change under replay.
  if (SPEC_NAMED_FIELDS.some((field) => field in body) && !patched('event-spec-fields')) {
    body = Object.fromEntries(
      Object.entries(body).filter(([field]) => !SPEC_NAMED_FIELDS.includes(field)),
    ) as RunEventBody;
  }
  run.durable.event_seq += 1;
  // Date.now() in a workflow is the task's start time from history: deterministic under replay.
  const event: LoggedRunEvent = {
    ...body,
    seq: run.durable.event_seq,
    run_id: run.settings.memoryKey,
    iteration,
    timestamp: new Date(Date.now()).toISOString(),
  };
  eventLog(run).push(event);
  run.derived.eventChars += JSON.stringify(event).length;
  keepEventWindow(run);
}

/** The run's event log: the newest events, in the durable part. */
export function eventLog(run: Run): LoggedRunEvent[] {
  return run.durable.recent_events as LoggedRunEvent[];
}

/** Drops the oldest events past the window's bounds (counted as dropped). */
function keepEventWindow(run: Run): void {
  const events = eventLog(run);
  while (
    events.length > EVENT_WINDOW.maxEvents ||
    (run.derived.eventChars > EVENT_WINDOW.maxChars && events.length > 1)
  ) {
    run.derived.eventChars -= JSON.stringify(events.shift()).length;
    run.durable.events_dropped += 1;
  }
}

/**
 * Spec 8.1: the first non-empty reason is kept; aborting again is harmless; with nothing running it does
 * nothing. Running fork children are aborted with the same reason (6.6).
 */
export function requestAbort(run: Run, reason: unknown): void {
  if (run.live.state !== 'running') return;
  if (reason !== undefined && typeof reason !== 'string')
    rejectInput(
      run,
      'abort',
      'signal',
      `reason must be a string, got ${reason === null ? 'null' : typeof reason}: aborting without a reason`,
    );
  if (typeof reason === 'string' && reason !== '' && run.live.abort.reason === '')
    run.live.abort.reason = reason.slice(0, 1000);
  run.live.abort.requested = true;
  if (run.live.phase) {
    run.live.phase.cancel();
    sinks.patchloop.abortRequested();
  }
  for (const child of run.live.children.values()) abortChild(run, child);
}

/** A child run as its parent reaches it: a handle it started, or one by workflow id. */
export type ChildRun = Pick<ExternalWorkflowHandle, 'signal'>;

export function abortChild(run: Run, child: ChildRun): void {
  run.live.childSignals.push(child.signal('abort', { reason: run.live.abort.reason }).catch(() => undefined));
}

/** Aborts every running child with this reason, and waits until the signals are delivered. */
export async function abortChildren(run: Run, reason: string): Promise<void> {
  for (const child of run.live.children.values())
    run.live.childSignals.push(child.signal('abort', { reason }).catch(() => undefined));
  await deliverChildSignals(run);
}

/** A signal still being delivered when the workflow closes is dropped: wait for them. */
export async function deliverChildSignals(run: Run): Promise<void> {
  while (run.live.childSignals.length > 0) await Promise.all(run.live.childSignals.splice(0));
}

export function enqueueMessage(run: Run, content: string): InboxEntry {
  const entry: InboxEntry = { id: run.durable.next_inbox_id, content };
  run.durable.next_inbox_id += 1;
  run.durable.inbox.push(entry);
  // A message the input guardrails have not checked yet is not shown: only its length.
  const shown = run.settings.screensInput ? { content: '', content_chars: content.length } : preview(content);
  emit(run, { event_type: 'user_message_received', ...shown });
  return entry;
}

/** Bytes of the messages waiting in the inbox. */
function queuedBytes(run: Run): number {
  return run.durable.inbox.reduce((total, entry) => total + utf8Bytes(entry.content), 0);
}

/** Validates a user message against the run's limits (for signal handlers and update validators). */
export function checkMessage(run: Run, payload: unknown): ReturnType<typeof checkUserMessage> {
  if (!run.settings.acceptsMessages) return { ok: false, reason: 'this workflow takes no user messages' };
  return checkUserMessage(payload, run.settings.messageLimits, queuedBytes(run));
}

/**
 * Applies what the agent accepts from others once it is known (when the run opens, at a handoff): its
 * limits, to the messages that come after, and the events its waits take. Messages accepted before
 * (against the defaults) stay accepted: an update may already have confirmed them.
 */
export function applyAgentLimits(run: Run, agent: Pick<AgentSpec, 'limits' | 'waits' | 'guardrails'>): void {
  run.settings.messageLimits = {
    maxMessageBytes: agent.limits.max_user_message_bytes,
    maxQueuedBytes: agent.limits.max_queued_message_bytes,
  };
  run.settings.waits = agent.waits ?? null;
  run.settings.screensInput = stageChecksFor(agent.guardrails, 'input').length > 0;
}

/** A refused signal or update leaves a visible trace: an event and a count in `status`. */
export function rejectInput(run: Run, input: string, via: 'signal' | 'update', reason: string): void {
  run.durable.rejected_inputs += 1;
  emit(run, { event_type: 'input_rejected', input, via, reason });
}

/** Accepted messages the model has not seen, for the result (or the failure) of a run that ends. */
export function unprocessedMessages(run: Run): UnprocessedMessage[] {
  return run.durable.inbox.map((entry) => ({ content: entry.content }));
}

const EVENT_TEXT_CHARS = 1024;

/** Text as events keep it: whole when short, else its start and its full length. */
function preview(content: string): { content: string; content_chars?: number } {
  return content.length <= EVENT_TEXT_CHARS
    ? { content }
    : { content: content.slice(0, EVENT_TEXT_CHARS), content_chars: content.length };
}

export function userMessageMutation(content: string): Mutation {
  return { type: 'UserMessageMutation', message: { role: 'user', content } };
}
