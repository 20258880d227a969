import { patched, workflowInfo, type CancellationScope, type ExternalWorkflowHandle } from '@temporalio/workflow';
import { compileContext, type Message, type Mutation, type SelfRefSnapshot } from '../context';
import {
  checkUserMessage,
  DEFAULT_MESSAGE_LIMITS,
  readableLimitBytes,
  RequestWriter,
  emptySelfRefQueue,
  emptyContextLedger,
  emptyUsageLedger,
  BudgetSettings,
  NO_BOUNDS,
  type BudgetLimit,
  type UsageLedger,
  ContextSettings,
  type ContextLedger,
  utf8Bytes,
  PROTOCOL_VERSION,
  type ApprovalRecord,
  type PendingApproval,
  type MessageLimits,
  type RecentUpdate,
  type LoggedRunEvent,
  type RunEvent,
  type RunEventBody,
  type RunOrigin,
  type ReportedState,
  type RunState,
  type SelfRefQueue,
  type TokenUsage,
  type UnprocessedMessage,
} from '../runtime';

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
  /** The agent's limits once it is resolved; the defaults until then. */
  messageLimits: MessageLimits;
  /** False for workflows that take no user messages (typed functions). */
  acceptsMessages: boolean;
  rejectedInputs: number;
  /** The latest updates applied, by update id (carried): a retry after continue-as-new gets the same result. */
  recentUpdates: RecentUpdate[];
  selfrefQueue: SelfRefQueue;
  /** Global across turns and continue-as-new: idempotency keys depend on it. */
  iteration: number;
  llmCalls: number;
  toolCalls: number;
  usage: TokenUsage | null;
  /** How large the context is, as measured and estimated, and its compactions (carried). */
  context: ContextLedger;
  /** The run's context settings: its agent's with its own override (set when the run opens). */
  contextSettings: ContextSettings;
  /** The run's budget (its agent's with its own override), what it spent (carried), and its extensions. */
  budget: BudgetSettings;
  ledger: UsageLedger;
  /** `extend_budget` updates this run accepted: a wait for one ends when it grows. */
  budgetExtensions: number;
  /** The limits a run waiting for `extend_budget` would pass; null when it does not wait. */
  awaitingBudget: BudgetLimit[] | null;
  abort: { requested: boolean; reason: string };
  phase: CancellationScope | null;
  /** Running child runs (forks and sub-agents) by workflow id: an abort reaches each as a signal. */
  children: Map<string, ChildRun>;
  /**
   * What each sub-agent child reported waiting for decisions (its calls and its own sub-agents'), by its
   * workflow id; listed while the child runs.
   */
  childApprovals: Map<string, PendingApproval[]>;
  /** Abort signals sent to child runs; awaited before the run ends, or the server drops them. */
  childSignals: Array<Promise<void>>;
  forkCount: number;
  forkDepth: number;
  forkId: string | null;
  /** How deep in a call tree of sub-agents the run is (a top-level run: 0). */
  agentDepth: number;
  /** The origin fields of this run's events (spec 7.8), from its workflow info and fork input. */
  origin: RunOrigin;
  /** The request of the LLM phase in flight, for the activity to load by query (`stable`: see RequestText). */
  request: { digest: string; text: string; stable: number; messagesAt: number; llmCall: number } | null;
  /** Writes and hashes each request from where the previous one's messages ended (memory only). */
  requestWriter: RequestWriter;
  /** The most recent events (a bounded window: the log lives in workflow memory). */
  events: LoggedRunEvent[];
  /** JSON characters of the events in the window. */
  eventChars: number;
  /** The last event's `seq`: it counts on across continue-as-new. */
  eventSeq: number;
  /** Events that left the window (read them live with the `events` query, or not at all). */
  eventsDropped: number;
  state: RunState;
  /** Approval requests of the batch in flight (empty when no batch waits or ran gated calls). */
  approvals: ApprovalRecord[];
  /** Decisions recorded by this run: a wait that saw one made progress (continue-as-new may follow). */
  approvalDecisions: number;
  /** Search attributes: whether the run keeps them, and what it last reported. */
  visibility: { enabled: boolean; state: ReportedState | null; iteration: number };
  /**
   * The most JSON its result or a transcript page may hold and still travel inline, readable by any
   * client (`readableLimitBytes` of its agent, set when the run opens).
   */
  readableBytes: number;
  /** The transcript's JSON text and digest for `transcriptPage`, kept while the transcript is this one (memory only). */
  transcriptText: { of: Message[]; text: string; digest: string } | null;
  /** The transcript as the last commit returned it (checked for linkage whole): later commits check only what they append. */
  checkedTranscript: Message[] | null;
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
    func_name: run.agent,
    trace_id: run.origin.agent_call_id,
    extra: {},
    origin: {
      ...run.origin,
      event_seq: event.seq,
      tool_name: tool?.tool_name ?? null,
      tool_call_id: tool?.tool_call_id ?? null,
    },
  };
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
    messageLimits: DEFAULT_MESSAGE_LIMITS,
    acceptsMessages: true,
    rejectedInputs: 0,
    recentUpdates: [],
    selfrefQueue: emptySelfRefQueue(),
    iteration: 0,
    llmCalls: 0,
    toolCalls: 0,
    usage: null,
    context: emptyContextLedger(),
    contextSettings: ContextSettings.parse({}),
    // No bounds until the run opens with its agent's budget (status reports none until then).
    budget: BudgetSettings.parse(NO_BOUNDS),
    ledger: emptyUsageLedger(),
    budgetExtensions: 0,
    awaitingBudget: null,
    abort: { requested: false, reason: '' },
    phase: null,
    children: new Map(),
    childApprovals: new Map(),
    childSignals: [],
    forkCount: 0,
    forkDepth: 0,
    forkId: null,
    agentDepth: 0,
    origin: runOrigin(memoryKey, null),
    request: null,
    requestWriter: new RequestWriter(),
    events: [],
    eventChars: 0,
    eventSeq: 0,
    eventsDropped: 0,
    state: 'running',
    approvals: [],
    approvalDecisions: 0,
    visibility: { enabled: false, state: null, iteration: 0 },
    readableBytes: readableLimitBytes({}),
    transcriptText: null,
    checkedTranscript: null,
  };
}

/** The window the run measures against: its setting, else the one a provider's error stated; null: unknown. */
export function contextWindow(run: Run): number | null {
  return run.contextSettings.window_tokens ?? run.context.learned_window_tokens;
}

/** The state queries and search attributes report: `awaiting_budget` or `awaiting_approval` while a run waits for one. */
export function reportedState(run: Run): ReportedState {
  if (run.state !== 'running') return run.state;
  if (run.awaitingBudget) return 'awaiting_budget';
  return run.approvals.some((record) => !record.decision) || childPending(run).length > 0
    ? 'awaiting_approval'
    : run.state;
}

/** What each running sub-agent reported waiting, by its workflow id (a child that ended is not listed). */
export function runningChildren(run: Run): Map<string, PendingApproval[]> {
  return new Map([...run.childApprovals].filter(([child]) => run.children.has(child)));
}

/** Calls of the run's running sub-agents (at any depth) that wait for decisions. */
export function childPending(run: Run): PendingApproval[] {
  return [...runningChildren(run).values()].flat();
}

/** Whether the run's transcript is the one its last commit returned (so it passed the linkage check). */
export function transcriptChecked(run: Run): boolean {
  return run.transcript === run.checkedTranscript;
}

/** Folds patches into the durable transcript (spec 4.6). Throws `ContextError` on invalid linkage. */
export function commit(run: Run, mutations: readonly Mutation[]): void {
  // Nothing to fold and the snapshot already reflects the transcript: skip the O(transcript) copy.
  const snapshotCurrent = (run.snapshot !== null) === run.selfref;
  if (mutations.length === 0 && snapshotCurrent) return;
  // The run's messages are values: the commit shares the ones it keeps instead of copying the transcript.
  const next = compileContext(run.transcript, mutations, run.selfref, true, transcriptChecked(run));
  run.transcript = next.transcript;
  run.checkedTranscript = next.transcript;
  run.snapshot = next.selfref_snapshot;
}

/** The event log's window: the newest events up to these bounds stay in memory. */
export const EVENT_WINDOW = { maxEvents: 2000, maxChars: 2_000_000 };

/** Event fields added after runs were recorded (spec 7.8's names of durations and errors). */
const SPEC_NAMED_FIELDS = ['execution_time', 'error_message', 'error_type', 'total_execution_time'];

export function emit(run: Run, body: RunEventBody, iteration = run.iteration): void {
  // A history recorded before these fields replays with the events it had: the log's size decides
  // whether carried continue-as-new state fits inline, so it must not change under replay.
  if (SPEC_NAMED_FIELDS.some((field) => field in body) && !patched('event-spec-fields')) {
    body = Object.fromEntries(
      Object.entries(body).filter(([field]) => !SPEC_NAMED_FIELDS.includes(field)),
    ) as RunEventBody;
  }
  run.eventSeq += 1;
  // Date.now() in a workflow is the task's start time from history: deterministic under replay.
  const event: LoggedRunEvent = {
    ...body,
    seq: run.eventSeq,
    run_id: run.memoryKey,
    iteration,
    timestamp: new Date(Date.now()).toISOString(),
  };
  run.events.push(event);
  run.eventChars += JSON.stringify(event).length;
  while (
    run.events.length > EVENT_WINDOW.maxEvents ||
    (run.eventChars > EVENT_WINDOW.maxChars && run.events.length > 1)
  ) {
    run.eventChars -= JSON.stringify(run.events.shift()).length;
    run.eventsDropped += 1;
  }
}

/**
 * Spec 8.1: the first non-empty reason is kept; aborting again is harmless; with nothing running it does
 * nothing. Running fork children are aborted with the same reason (6.6).
 */
export function requestAbort(run: Run, reason: unknown): void {
  if (run.state !== 'running') return;
  if (reason !== undefined && typeof reason !== 'string')
    rejectInput(
      run,
      'abort',
      'signal',
      `reason must be a string, got ${reason === null ? 'null' : typeof reason}: aborting without a reason`,
    );
  if (typeof reason === 'string' && reason !== '' && run.abort.reason === '') run.abort.reason = reason.slice(0, 1000);
  run.abort.requested = true;
  run.phase?.cancel();
  for (const child of run.children.values()) abortChild(run, child);
}

/** A child run as its parent reaches it: a handle it started, or one by workflow id. */
export type ChildRun = Pick<ExternalWorkflowHandle, 'signal'>;

export function abortChild(run: Run, child: ChildRun): void {
  run.childSignals.push(child.signal('abort', { reason: run.abort.reason }).catch(() => undefined));
}

/** Aborts every running child with this reason, and waits until the signals are delivered. */
export async function abortChildren(run: Run, reason: string): Promise<void> {
  for (const child of run.children.values())
    run.childSignals.push(child.signal('abort', { reason }).catch(() => undefined));
  await deliverChildSignals(run);
}

/** A signal still being delivered when the workflow closes is dropped: wait for them. */
export async function deliverChildSignals(run: Run): Promise<void> {
  while (run.childSignals.length > 0) await Promise.all(run.childSignals.splice(0));
}

export function enqueueMessage(run: Run, content: string): InboxEntry {
  const entry = { id: run.nextInboxId, content };
  run.nextInboxId += 1;
  run.inbox.push(entry);
  emit(run, { event_type: 'user_message_received', ...preview(content) });
  return entry;
}

/** Bytes of the messages waiting in the inbox. */
export function queuedBytes(run: Run): number {
  return run.inbox.reduce((total, entry) => total + utf8Bytes(entry.content), 0);
}

/** Validates a user message against the run's limits (for signal handlers and update validators). */
export function checkMessage(run: Run, payload: unknown): ReturnType<typeof checkUserMessage> {
  if (!run.acceptsMessages) return { ok: false, reason: 'this workflow takes no user messages' };
  return checkUserMessage(payload, run.messageLimits, queuedBytes(run));
}

/**
 * Applies the agent's own limits once it is known, to the messages that come after. Messages accepted
 * before (against the defaults) stay accepted: an update may already have confirmed them.
 */
export function applyAgentLimits(
  run: Run,
  limits: { max_user_message_bytes: number; max_queued_message_bytes: number },
): void {
  run.messageLimits = {
    maxMessageBytes: limits.max_user_message_bytes,
    maxQueuedBytes: limits.max_queued_message_bytes,
  };
}

/** A refused signal or update leaves a visible trace: an event and a count in `status`. */
export function rejectInput(run: Run, input: string, via: 'signal' | 'update', reason: string): void {
  run.rejectedInputs += 1;
  emit(run, { event_type: 'input_rejected', input, via, reason });
}

/** Accepted messages the model has not seen, for the result (or the failure) of a run that ends. */
export function unprocessedMessages(run: Run): UnprocessedMessage[] {
  return run.inbox.map((entry) => ({ content: entry.content }));
}

const EVENT_TEXT_CHARS = 1024;

/** Text as events keep it: whole when short, else its start and its full length. */
export function preview(content: string): { content: string; content_chars?: number } {
  return content.length <= EVENT_TEXT_CHARS
    ? { content }
    : { content: content.slice(0, EVENT_TEXT_CHARS), content_chars: content.length };
}

export function userMessageMutation(content: string): Mutation {
  return { type: 'UserMessageMutation', message: { role: 'user', content } };
}
