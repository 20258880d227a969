import { z } from 'zod';
import { JsonObject, Message, Mutation } from '../context';
import { AgentSpec } from './agent';
import { ApprovalRecord } from './approvals';
import { CompactionIntent, MemoryIntent, ToolCallRequest } from './phases';
import { TokenUsage } from './usage';
import { sharedSchema } from '../context/shared-schema';

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

export const CarriedInboxEntry = sharedSchema('runtime/carried-state#CarriedInboxEntry', () =>
  z.strictObject({ id: z.number().int(), content: z.string() }),
);

/** Version 2 added `awaiting_batch`; version 1 states still load. */
export const RUN_STATE_SCHEMA_VERSION = 2;
export const RUN_STATE_SCHEMA_VERSIONS: readonly number[] = [1, 2];

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
  }),
);
export type AwaitingBatch = z.infer<typeof AwaitingBatch>;

/**
 * What `agentRun` carries across continue-as-new, at an iteration boundary: the context state itself
 * (transcript, pending patches, queued messages, the SelfRef queue), the counters ids and keys depend
 * on, and the tail of the event log. Versioned: a new build reads every older version (fixtures in
 * test/fixtures/carried-state keep them loadable).
 */
export const AgentRunState = sharedSchema('runtime/carried-state#AgentRunState', () =>
  z.strictObject({
    schema_version: z.union([z.literal(1), z.literal(2)]),
    agent: AgentSpec,
    transcript: z.array(Message),
    pending: z.array(Mutation),
    inbox: z.array(CarriedInboxEntry),
    next_inbox_id: z.number().int(),
    selfref_queue: z.strictObject({ intents: z.array(MemoryIntent), compaction: CompactionIntent.nullable() }),
    iteration: z.number().int().nonnegative(),
    llm_calls: z.number().int().nonnegative(),
    tool_calls: z.number().int().nonnegative(),
    /** Tool calls of the turn so far: the tool budget counts them. */
    turn_tool_calls: z.number().int().nonnegative(),
    usage: TokenUsage.nullable(),
    fork_count: z.number().int().nonnegative(),
    event_seq: z.number().int().nonnegative(),
    events_dropped: z.number().int().nonnegative(),
    /** The newest events, so `status` and `show` still tell the run's story. */
    recent_events: z.array(JsonObject),
    rejected_inputs: z.number().int().nonnegative(),
    continued: z.number().int().nonnegative(),
    /** Version 2: the batch that waited for approval decisions at the boundary, if one did. */
    awaiting_batch: AwaitingBatch.optional(),
  }),
);
export type AgentRunState = z.infer<typeof AgentRunState>;
