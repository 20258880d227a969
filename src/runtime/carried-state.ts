import { z } from 'zod';
import { cloneJson, JsonObject, Message, Mutation } from '../context';
import { AgentSpec } from './agent';
import { ApprovalRecord, PendingApproval } from './approvals';
import { CompactionIntent, MemoryIntent, ToolBatchResult, ToolCallReport, ToolCallRequest } from './phases';
import { TokenUsage } from './usage';
import { emptyUsageLedger, UsageLedger } from './budget';
import { sharedSchema } from '../context/shared-schema';
import { HeldEvent, MAX_INBOX_EVENTS, MAX_REMEMBERED_EVENT_KEYS } from './wait-settings';

/** When a run or session continues as new (besides Temporal's own suggestion), at a boundary. */
export const ContinueAsNewPolicy = sharedSchema('runtime/carried-state#ContinueAsNewPolicy', () =>
  z.strictObject({
    // Lower bounds keep a chain from continuing again and again on its own carried state.
    max_history_events: z.number().int().min(10).default(4000),
    max_history_bytes: z
      .number()
      .int()
      .min(64 * 1024)
      .default(8 * 1024 * 1024),
  }),
);
export type ContinueAsNewPolicy = z.infer<typeof ContinueAsNewPolicy>;

/**
 * What a run knows about the size of its context, carried so a decision after continue-as-new or on
 * replay is the same: the provider's last count and the size of the request it counted, the window a
 * provider's `context_length_exceeded` stated (when no setting gave one), and its compactions.
 */
export const ContextLedger = sharedSchema('runtime/carried-state#ContextLedger', () =>
  z.strictObject({
    measure: z
      .strictObject({ request_chars: z.number().int().nonnegative(), prompt_tokens: z.number().nonnegative() })
      .nullable(),
    learned_window_tokens: z.number().int().positive().nullable(),
    /** The estimated size of the latest request, in tokens. */
    tokens: z.number().int().nonnegative(),
    compactions: z.number().int().nonnegative(),
  }),
);
export type ContextLedger = z.infer<typeof ContextLedger>;

function emptyContextLedger(): ContextLedger {
  return { measure: null, learned_window_tokens: null, tokens: 0, compactions: 0 };
}

const CarriedInboxEntry = sharedSchema('runtime/carried-state#CarriedInboxEntry', () =>
  z.strictObject({ id: z.number().int(), content: z.string() }),
);

/**
 * How many updates a run remembers across continue-as-new, and the most JSON of their results it keeps
 * (one result, and all of them: older results are dropped first).
 */
export const RECENT_UPDATES = 32;
export const RECENT_UPDATE_RESULT_CHARS = 8192;
export const RECENT_UPDATES_RESULT_CHARS = 16384;

/** An update the run applied: its id, and its result (or that the result was too large to keep). */
export const RecentUpdate = sharedSchema('runtime/carried-state#RecentUpdate', () =>
  z.union([
    z.strictObject({ id: z.string(), result: z.unknown() }),
    z.strictObject({ id: z.string(), result_dropped: z.literal(true) }),
  ]),
);
export type RecentUpdate = z.infer<typeof RecentUpdate>;

export const RUN_STATE_SCHEMA_VERSION = 5;
export const RUN_STATE_SCHEMA_VERSIONS: readonly number[] = [1, 2, 3, 4, 5];

/**
 * A tool batch waiting for approval decisions when the run continued as new: the next run resumes the
 * wait with the same requests (decided or not), then runs the batch and commits it with its reply.
 */
export const AwaitingBatch = sharedSchema('runtime/carried-state#AwaitingBatch', () =>
  z.strictObject({
    /** The iteration whose LLM reply asked for the batch. */
    iteration: z.number().int().nonnegative(),
    calls: z.array(ToolCallRequest),
    /** The reply's patches, committed with the batch's results. */
    llm_mutations: z.array(Mutation),
    reply_content: z.string(),
    approvals: z.array(ApprovalRecord),
    /**
     * A batch that was running when the run continued as new, only sub-agent calls still out: what its
     * activities returned and the workflow calls that finished (by position). The next run finishes the
     * batch with these, and re-attaches to the sub-agent runs still going (their ids say which).
     */
    running: z
      .strictObject({
        activity: ToolBatchResult,
        finished: z.array(
          z.strictObject({ call_index: z.number().int().nonnegative(), content: z.string(), report: ToolCallReport }),
        ),
        /** The batch's reports so far, in completion order. */
        reports: z.array(ToolCallReport),
      })
      .optional(),
  }),
);
export type AwaitingBatch = z.infer<typeof AwaitingBatch>;
/** A batch carried while its sub-agent calls ran (`AwaitingBatch.running`). */
export type RunningBatch = NonNullable<AwaitingBatch['running']>;

/**
 * The durable part of a run (`Run.durable` in the workflows): the context state itself (transcript,
 * pending patches, queued messages, the SelfRef queue), the counters ids and keys depend on, usage and
 * spending, the event log and what running sub-agents wait for. A run keeps it as this value and
 * carries it across continue-as-new as it is; a restored run takes it back by the keys of this shape.
 * Fields added after a version was recorded have defaults, so every older state still loads (fixtures
 * in test/fixtures/carried-state).
 */
export const DurableRun = sharedSchema('runtime/carried-state#DurableRun', () =>
  z.strictObject({
    transcript: z.array(Message),
    pending: z.array(Mutation),
    inbox: z.array(CarriedInboxEntry),
    next_inbox_id: z.number().int(),
    selfref_queue: z
      .strictObject({ intents: z.array(MemoryIntent), compaction: CompactionIntent.nullable() })
      // A function: zod copies a default only shallowly, and restored runs push to this list.
      .default(() => ({ intents: [], compaction: null })),
    /** Global across turns and continue-as-new: idempotency keys depend on it. */
    iteration: z.number().int().nonnegative(),
    llm_calls: z.number().int().nonnegative(),
    tool_calls: z.number().int().nonnegative(),
    usage: TokenUsage.nullable(),
    fork_count: z.number().int().nonnegative(),
    /** The last event's `seq`: it counts on across continue-as-new. */
    event_seq: z.number().int().nonnegative(),
    /** Events that left the log's window (read them live with the `events` query, or not at all). */
    events_dropped: z.number().int().nonnegative().default(0),
    /**
     * The newest events (a bounded window: the log lives in workflow memory); the newest of them travel
     * across continue-as-new, so `status` and `show` still tell the run's story.
     */
    recent_events: z.array(JsonObject).default([]),
    rejected_inputs: z.number().int().nonnegative().default(0),
    /** The latest updates applied, so a client's retry of one after continue-as-new is not applied again. */
    recent_updates: z.array(RecentUpdate).max(RECENT_UPDATES).default([]),
    /** How large the context is, as measured and estimated, and its compactions. */
    context: ContextLedger.default(emptyContextLedger),
    /** What the run has spent against its budget. */
    ledger: UsageLedger.default(emptyUsageLedger),
    /** What the run's running sub-agents reported waiting for decisions, by child workflow id. */
    child_approvals: z.record(z.string(), z.array(PendingApproval)).optional(),
    /** Events delivered (`deliver_event`) that no wait has taken yet, oldest first. */
    held_events: z.array(HeldEvent).max(MAX_INBOX_EVENTS).default([]),
    /** The idempotency keys of the newest events delivered: a key delivered again applies once. */
    event_keys: z.array(z.string()).max(MAX_REMEMBERED_EVENT_KEYS).default([]),
  }),
);
export type DurableRun = z.infer<typeof DurableRun>;

/**
 * The context state of a run (part of its durable part): what a session's failed turn rolls back to,
 * as it was before the turn's message.
 */
export const TurnContext = sharedSchema('runtime/carried-state#TurnContext', () =>
  DurableRun.pick({ transcript: true, pending: true, selfref_queue: true }),
);
export type TurnContext = z.infer<typeof TurnContext>;

/**
 * The fields of a value that a schema of objects names, by the keys of its shape: a run's durable part
 * out of its carried state, a turn's context out of a run's durable part. Arrays are copied and objects
 * cloned, so the part does not change with the value (the messages themselves are shared: they are values).
 */
export function partOf<Shape extends z.ZodRawShape>(
  schema: z.ZodObject<Shape>,
  value: { [Key in keyof Shape]?: unknown },
): z.infer<z.ZodObject<Shape>> {
  return Object.fromEntries(
    Object.keys(schema.shape).map((key) => {
      const field = value[key];
      return [
        key,
        Array.isArray(field) ? [...field] : field !== null && typeof field === 'object' ? cloneJson(field) : field,
      ];
    }),
  ) as z.infer<z.ZodObject<Shape>>;
}

/**
 * What every durable run carries across continue-as-new, runs and sessions alike, at a boundary: its
 * durable part, and where its turn stands (the active agent, the turn's tool calls, a batch waiting for
 * decisions or sub-agents). `agentRun` and `chatSession` extend it with their own fields and a schema
 * version each; one carry and one restore (`workflows/run/carried-run.ts`) write and read it.
 */
export const CarriedRun = sharedSchema('runtime/carried-state#CarriedRun', () =>
  DurableRun.extend({
    agent: AgentSpec,
    /** Tool calls of the turn so far: the tool budget counts them. */
    turn_tool_calls: z.number().int().nonnegative().default(0),
    continued: z.number().int().nonnegative(),
    /** The batch that waited for approval decisions (or for sub-agents) at the boundary, if one did. */
    awaiting_batch: AwaitingBatch.optional(),
  }),
);
export type CarriedRun = z.infer<typeof CarriedRun>;

/**
 * What `agentRun` carries: the core. Version 2 added `awaiting_batch`, version 3 the context ledger
 * (`context`), version 4 the latest updates applied (`recent_updates`), version 5 the events held for
 * durable waits (`held_events`, `event_keys`); older states still load.
 */
export const AgentRunState = sharedSchema('runtime/carried-state#AgentRunState', () =>
  CarriedRun.extend({
    schema_version: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5)]),
  }),
);
export type AgentRunState = z.infer<typeof AgentRunState>;
