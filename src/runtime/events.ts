import { z } from 'zod';
import { JsonObject, JsonValue } from '../context';
import { sharedSchema } from '../context/shared-schema';
import { PendingApproval } from './approvals';
import { TokenUsage } from './usage';
import { BUDGET_LIMITS, BudgetExtension, type TokenPrices } from './budget';

/**
 * The event protocol (docs/event-protocol.md): what a run tells the world, as the `events` and `status`
 * queries answer it (`RunEvent`, the coarse log) and as the token side channel carries it
 * (`StreamEvent`). Every message has `event_type` and `protocol_version`; `schemas/run-event.schema.json`
 * and `schemas/stream-event.schema.json` are generated from the schemas below (`npm run schemas`).
 *
 * The version goes up with any change of these schemas (a unit test holds each version's schema
 * digest); readers of a version read later ones by ignoring event types and fields they do not know.
 */
export const PROTOCOL_VERSION = 3;

/**
 * Spec 7.8's origin of an event. `session_id` is the call tree's root (the root run's or the session's
 * workflow id), `agent_call_id` the run's own workflow id and `parent_agent_call_id` its parent's;
 * `event_seq` is the event's `seq`. A fork child's events carry its fork fields, so a stream that merges
 * a tree's events (`followRun`) keeps every origin, however deep.
 */
export const EventOrigin = sharedSchema('runtime/events#EventOrigin', () =>
  z.strictObject({
    session_id: z.string(),
    agent_call_id: z.string(),
    event_seq: z.number().int(),
    parent_agent_call_id: z.string().nullable(),
    fork_id: z.string().nullable(),
    fork_depth: z.number().int().nonnegative(),
    /** Kept for the spec's shape; the reference defines but never sets it. */
    fork_seq: z.number().int().nullable(),
    selfref_instance_id: z.string().nullable(),
    source_memory_key: z.string().nullable(),
    memory_key: z.string(),
    tool_name: z.string().nullable(),
    tool_call_id: z.string().nullable(),
  }),
);
export type EventOrigin = z.infer<typeof EventOrigin>;

/** The origin fields one run shares across its events. */
export type RunOrigin = Omit<EventOrigin, 'event_seq' | 'tool_name' | 'tool_call_id'>;

const ToolCallRef = sharedSchema('runtime/events#ToolCallRef', () =>
  z.strictObject({ id: z.string(), name: z.string() }),
);

/**
 * The fields of each event type (spec 7.8 vocabulary, compact fields: no message lists), as shapes:
 * `RunEvent` joins each to the common fields. Fields marked "since" are absent from events of runs
 * recorded before them (a replayed run logs what it logged then).
 */
function eventBodies() {
  const usage = TokenUsage.nullable();
  const seconds = (text: string) => z.number().nonnegative().optional().describe(text);
  return {
    react_start: { agent: z.string(), user_task_prompt: z.string(), available_tools: z.array(z.string()) },
    react_iteration_start: {},
    /** `content` is the first 1,024 characters of a longer message, whose length `content_chars` gives. */
    user_message_received: { content: z.string(), content_chars: z.number().int().optional() },
    llm_call_start: {
      llm_call: z.number().int(),
      stream: z
        .boolean()
        .describe(
          "Whether the run asked for a streamed reply; `llm_call_end`'s `streamed` says how the call went to the provider.",
        ),
      message_count: z.number().int(),
      with_tools: z.boolean(),
    },
    llm_call_end: {
      llm_call: z.number().int(),
      outcome: z
        .enum(['completed', 'aborted', 'skipped', 'refused'])
        .describe('`refused`: the provider answered context_length_exceeded; the run compacts and calls again.'),
      content: z
        .string()
        .describe("The reply's text; its first 16 KB when longer (`content_chars` then gives its length)."),
      content_chars: z.number().int().optional(),
      tool_calls: z.array(ToolCallRef),
      usage,
      duration_ms: z.number().nonnegative(),
      execution_time: seconds("Spec 7.8's name for the duration, in seconds."),
      streamed: z
        .boolean()
        .optional()
        .describe(
          "Whether the call went to the provider streamed: false when the provider's profile sent plain a call the run asked to stream (llama-cpp with `tool_choice: auto`). Absent when nothing was sent, and in runs recorded before it.",
        ),
    },
    tool_calls_batch_start: { batch_size: z.number().int(), tool_calls: z.array(ToolCallRef) },
    tool_call_start: { tool_name: z.string(), tool_call_id: z.string(), arguments: JsonObject },
    tool_call_end: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      result: JsonValue.describe(
        'The result parsed as JSON; for results over 1 KB, the first 1,024 characters of the content.',
      ),
      result_truncated: z.literal(true).optional(),
      success: z.literal(true),
      duration_ms: z.number().nonnegative(),
      execution_time: seconds('The duration in seconds.'),
    },
    tool_call_error: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      error: z.string(),
      /** Spec 7.8's names: the message again, and `ToolTimeout` or `ToolError`. */
      error_message: z.string().optional(),
      error_type: z.string().optional(),
      duration_ms: z.number().nonnegative(),
      execution_time: seconds('The duration in seconds.'),
    },
    tool_calls_batch_end: {
      batch_size: z.number().int(),
      success_count: z.number().int(),
      error_count: z.number().int(),
      cancelled: z.array(z.string()),
      total_execution_time: seconds("Seconds from the calls' start to the batch's end (workflow time)."),
    },
    react_iteration_end: { tool_calls_count: z.number().int() },
    /** A gated call waits for the `approve` update; nothing of its batch runs until every gated call is decided. */
    approval_requested: PendingApproval.shape,
    approval_decided: {
      tool_call_id: z.string(),
      tool_name: z.string(),
      approved: z.boolean(),
      reason: z.string().optional(),
      by: z.enum(['update', 'timeout']).describe('`timeout`: `limits.approval_timeout_seconds` passed undecided.'),
    },
    custom_event: { event_name: z.string(), data: JsonObject, tool_name: z.string(), tool_call_id: z.string() },
    /** `to_current_build`: Worker Versioning's current build changed, and the next run starts on it. */
    continued_as_new: {
      history_events: z.number().int(),
      history_bytes: z.number().int(),
      to_current_build: z.literal(true).optional(),
    },
    /** A sub-agent call started a child run (`child_workflow_id`), or found the one it started before. */
    subagent_started: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      agent: z.string(),
      child_workflow_id: z.string(),
      depth: z.number().int(),
    },
    /**
     * A sub-agent call ended: its child run `completed` (its answer is the call's result), `failed`, was
     * `aborted` alone, ran out of budget (`budget_exhausted`), or was `cancelled` with its caller.
     */
    subagent_finished: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      agent: z.string(),
      child_workflow_id: z.string(),
      status: z.enum(['completed', 'failed', 'aborted', 'budget_exhausted', 'cancelled']),
      usage,
      error: z.string().optional(),
    },
    /**
     * A durable wait began (`sleep`, `wait_for_event`): a timer in the workflow, no activity while it
     * waits. `wake_at` is when it ends at the latest (ISO).
     */
    wait_started: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      tool: z.enum(['sleep', 'wait_for_event']),
      wake_at: z.string(),
      event: z.string().optional(),
      reason: z.string().optional(),
    },
    /** A durable wait ended: its time came, its event came (`event`), or a user message woke it early. */
    wait_ended: {
      tool_name: z.string(),
      tool_call_id: z.string(),
      woke: z.enum(['time', 'event', 'user_message']),
      waited_ms: z.number().int(),
      event: z.string().optional(),
    },
    /**
     * Another service delivered an event (`deliver_event`): a wait for it took it at once
     * (`taken_by_wait`), or the run holds it for the next wait for that name.
     */
    event_received: {
      name: z.string(),
      key: z.string().optional(),
      payload_bytes: z.number().int(),
      taken_by_wait: z.boolean(),
    },
    /**
     * A handoff (`transfer_to_<agent>`) took effect: from here on the run's active agent is `to` (its
     * instructions, tools and model), on the same transcript. `tool_call_id` is the call that asked for it.
     */
    agent_handoff: {
      from: z.string(),
      to: z.string(),
      tool_name: z.string(),
      tool_call_id: z.string(),
      reason: z.string().optional(),
    },
    /**
     * After continue-as-new the agent's MCP servers were asked for their tools again: what the model is
     * offered from now on differs by these names. With `problem` the run keeps the tools it had.
     */
    mcp_tools_relisted: {
      added: z.array(z.string()),
      removed: z.array(z.string()),
      changed: z.array(z.string()),
      problem: z.string().optional(),
    },
    /**
     * The run shrinks its context before a call: `proactive` when the request would pass `compact_at` of
     * the window, `reactive` after the provider answered `context_length_exceeded`.
     */
    context_compaction_start: {
      reason: z.enum(['proactive', 'reactive']),
      tokens_before: z.number(),
      window_tokens: z.number(),
      target_tokens: z.number(),
    },
    context_compaction_end: {
      reason: z.enum(['proactive', 'reactive']),
      tokens_before: z.number(),
      tokens_after: z.number(),
      window_tokens: z.number(),
      cleared_tool_results: z.number().int(),
      cleared_chars: z.number().int(),
      summarized_messages: z.number().int(),
      shortened_messages: z.number().int(),
      /** Model calls that wrote the summary (0 when clearing was enough), and their usage. */
      summary_calls: z.number().int(),
      usage,
      /** Set when an abort stopped the compaction: the context was left as it was. */
      aborted: z.literal(true).optional(),
      /** Set when the budget could not afford a summary call: the context was left as it was. */
      budget_exhausted: z.literal(true).optional(),
    },
    /**
     * The next step would pass a limit of the run's budget: the run ends (`budget_exhausted`) or, with
     * `on_exhausted: "ask"`, waits for `extend_budget` (`waiting`).
     */
    budget_exhausted: {
      exceeded: z.array(z.enum(BUDGET_LIMITS)),
      waiting: z.boolean(),
      limit: z.record(z.string(), z.number().nullable()),
      spent: z.record(z.string(), z.number()),
    },
    budget_extended: { extension: BudgetExtension, limit: z.record(z.string(), z.number().nullable()) },
    /** A signal or update the run refused (bad shape, too large, queue full): recorded, never silent. */
    input_rejected: { input: z.string(), via: z.enum(['signal', 'update']), reason: z.string() },
    /** A session turn failed (the provider rejected it, ...): the turn is rolled back and the session goes on. */
    turn_failed: { error_type: z.string(), message: z.string() },
    react_end: {
      status: z.enum(['completed', 'aborted', 'budget_exhausted']),
      final_response: z.string(),
      total_iterations: z.number().int(),
      total_llm_calls: z.number().int(),
      total_tool_calls: z.number().int(),
      total_token_usage: usage,
      aborted: z.literal(true).optional(),
      abort_reason: z.string().optional(),
    },
  };
}

/** Every event type, in the order of the log's vocabulary. */
export type RunEventType = keyof ReturnType<typeof eventBodies>;

/** The fields every event has, besides its type's (see `RunEvent`). */
function commonFields() {
  return {
    seq: z.number().int().positive(),
    run_id: z.string().describe("The run's memory key: its workflow id, or a fork's key."),
    iteration: z.number().int().nonnegative(),
    timestamp: z.string().describe('ISO time (workflow time, stable under replay).'),
    protocol_version: z.literal(PROTOCOL_VERSION),
    origin: EventOrigin,
    func_name: z.string().describe("The agent's name."),
    trace_id: z.string().describe("The run's workflow id."),
    extra: JsonObject,
  };
}

function eventOf<Type extends string, Body extends z.core.$ZodLooseShape>(type: Type, body: Body) {
  return z.strictObject({ event_type: z.literal(type), ...body, ...commonFields() });
}

type Bodies = ReturnType<typeof eventBodies>;
type RunEventOption = { [Type in RunEventType]: ReturnType<typeof eventOf<Type, Bodies[Type]>> }[RunEventType];

/**
 * One event as the `events` and `status` queries report it: its type's fields, the log's own (`seq`
 * counts from 1 per run chain and is stable under replay), and spec 7.8's common fields the queries add
 * (the log does not repeat them): where it comes from, the agent's name, the run's trace id (its
 * workflow id), `extra`, and the protocol's version.
 */
export const RunEvent = sharedSchema('runtime/events#RunEvent', () => {
  const bodies = eventBodies();
  const options = (Object.keys(bodies) as RunEventType[]).map((type) => eventOf(type, bodies[type]));
  return z.discriminatedUnion('event_type', options as unknown as [RunEventOption, ...RunEventOption[]]);
});
export type RunEvent = z.infer<typeof RunEvent>;

/** What the queries add to a logged event. */
type QueryFields = 'protocol_version' | 'origin' | 'func_name' | 'trace_id' | 'extra';
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An event as the run's log keeps it (in memory, and carried across continue-as-new). */
export type LoggedRunEvent = DistributiveOmit<RunEvent, QueryFields>;
/** What the loop emits: the type's fields; `emit` numbers and dates it. */
export type RunEventBody = DistributiveOmit<RunEvent, QueryFields | 'seq' | 'run_id' | 'iteration' | 'timestamp'>;

/** Answer of the `events` query: events after an offset, and the offset to ask from next. */
export interface EventPage {
  events: RunEvent[];
  next_after: number;
  state: ReportedState;
  /** Events that already left the run's in-memory window (a follower that fell that far behind misses them). */
  events_dropped: number;
  /** Whether events after this page exist already (the page stopped at its limit); absent from older workers. */
  more?: boolean;
}

/** One token chunk on the side channel (never in Temporal history). `chunk_index` is its position in the call's stream. */
export const ChunkEvent = sharedSchema('runtime/events#ChunkEvent', () =>
  z.strictObject({
    event_type: z.literal('llm_chunk_arrive'),
    protocol_version: z.literal(PROTOCOL_VERSION),
    run_id: z.string(),
    iteration: z.number().int(),
    /** The run's LLM call number (the `llm_call` of `llm_call_start` / `llm_call_end`). */
    llm_call: z.number().int(),
    /** A retried attempt streams again from the start; followers drop the earlier attempt's chunks. */
    attempt: z.number().int(),
    chunk_index: z.number().int().nonnegative(),
    chunk: z.string(),
    /** The call's text so far in this attempt, this chunk included (spec 7.8); added by readers, not stored. */
    accumulated_content: z.string().optional(),
    timestamp: z.string(),
  }),
);
export type ChunkEvent = z.infer<typeof ChunkEvent>;

/**
 * Spec 7.4: an argument of a streamed tool call grew. `chunk_index` is the event's position in the
 * call's stream (text chunks and argument deltas share one sequence), so offsets stay gapless.
 */
const ArgumentsDeltaEvent = sharedSchema('runtime/events#ArgumentsDeltaEvent', () =>
  z.strictObject({
    event_type: z.literal('tool_call_arguments_delta'),
    protocol_version: z.literal(PROTOCOL_VERSION),
    run_id: z.string(),
    iteration: z.number().int(),
    llm_call: z.number().int(),
    attempt: z.number().int(),
    chunk_index: z.number().int().nonnegative(),
    tool_name: z.string(),
    tool_call_id: z.string(),
    argname: z.string(),
    argcontent_delta: z.string(),
    timestamp: z.string(),
  }),
);

/**
 * Marks the end of one attempt's stream. `completed` and `aborted` end the call; `failed` means the
 * attempt broke and its chunks never reach the transcript: with `retrying`, a later attempt streams the
 * call again (unless the retry budget has run out: the run's events say so); without, the call is over.
 */
export const ChunkStreamEnd = sharedSchema('runtime/events#ChunkStreamEnd', () =>
  z.strictObject({
    event_type: z.literal('llm_stream_end'),
    protocol_version: z.literal(PROTOCOL_VERSION),
    run_id: z.string(),
    llm_call: z.number().int(),
    attempt: z.number().int(),
    chunks: z.number().int().nonnegative(),
    outcome: z.enum(['completed', 'aborted', 'failed']),
    /** The failure type of a failed attempt (e.g. `ProviderStreamIncomplete`). */
    error: z.string().optional(),
    /** A failed attempt: whether the failure is retryable, so another attempt follows. */
    retrying: z.boolean().optional(),
  }),
);
export type ChunkStreamEnd = z.infer<typeof ChunkStreamEnd>;

/** What the token side channel carries (worker SSE endpoint, Redis stream, `follow --json`). */
export const StreamEvent = sharedSchema('runtime/events#StreamEvent', () =>
  z.discriminatedUnion('event_type', [ChunkEvent, ArgumentsDeltaEvent, ChunkStreamEnd]),
);
export type StreamEvent = z.infer<typeof StreamEvent>;

export type RunState = 'running' | 'completed' | 'aborted' | 'failed' | 'budget_exhausted';

/**
 * The state queries report: a running run whose batch waits for decisions is `awaiting_approval`; one
 * that waits for `extend_budget` is `awaiting_budget`; one whose batch holds durable waits only
 * (`sleep`, `wait_for_event`) is `waiting`.
 */
export type ReportedState = RunState | 'awaiting_approval' | 'awaiting_budget' | 'waiting';

/** Answer of the `status` query. */
export interface RunStatus {
  state: ReportedState;
  /** Gated tool calls waiting for a decision (the `approve` update), in the batch's order. */
  pending_approvals: PendingApproval[];
  /** The active agent: the one the run started with, or the last one a handoff passed it to. */
  agent: string;
  /** The agent the run (or session) started with: `agent` differs from it after a handoff. */
  started_agent?: string;
  /** A session's latest turn, when it failed: the error its `send` answered (its message stays in the transcript). */
  last_turn_failure?: { type: string; message: string } | null;
  iteration: number;
  llm_calls: number;
  tool_calls: number;
  usage: TokenUsage | null;
  /** The context's size (the latest request, estimated) against the model's window, and compactions so far. */
  context: { tokens: number; window_tokens: number | null; compact_at_tokens: number | null; compactions: number };
  abort_requested: boolean;
  abort_reason: string;
  queued_user_messages: number;
  /**
   * The durable waits in progress (`sleep`, `wait_for_event`): when each ends at the latest (`wake_at`,
   * ISO), for which event, and why; empty when the run does not wait.
   */
  waiting?: Array<{
    tool_call_id: string;
    tool: 'sleep' | 'wait_for_event';
    wake_at: string;
    event?: string;
    reason?: string;
  }>;
  /** The earliest `wake_at` of `waiting` (absent when it does not wait). */
  wake_at?: string;
  /** Events delivered (`deliver_event`) that no wait has taken yet. */
  held_events?: number;
  /** The run's budget (limits with extensions, what was spent); null when it has no limit. */
  budget: { limit: Record<string, number | null>; spent: Record<string, number>; awaiting: string[] | null } | null;
  /** What a million tokens cost (`budget.prices` of the agent or run), so readers price each call; null without. */
  prices?: TokenPrices | null;
  /** Signals and updates refused so far (each also logged as an `input_rejected` event). */
  rejected_inputs: number;
  /** Temporal's own figures, refreshed at each workflow task. */
  history: { events: number; bytes: number };
  /** A page of the event log: events with `seq > after`, at most `limit` (default 500) and about 1 MB. */
  events: RunEvent[];
  /** Where the next page starts (`after` of the next call). */
  next_after: number;
  events_dropped: number;
}
