import { z } from 'zod';
import {
  JsonObject,
  JsonValue,
  Message,
  MultimodalToolResultMutation,
  Mutation,
  SummaryPayload,
  type ToolCall,
} from '../context';
import { AgentSpec } from './agent';
import { McpToolReference } from './mcp-settings';
import { ProviderSelection } from './provider';
import { TokenUsage } from './usage';
import { sharedSchema } from '../context/shared-schema';

/**
 * Wire types between the workflow and its activities. Inputs stay O(new content): the LLM phase gets
 * a digest of the request the workflow compiled, not the request (unless `inline` is chosen).
 */

/** The provider request body the workflow compiles (chat completions). */
export const LlmRequest = sharedSchema('runtime/phases#LlmRequest', () =>
  z.looseObject({
    model: z.string(),
    messages: z.array(Message),
    tools: z.array(JsonObject).optional(),
    stream: z.boolean(),
  }),
);
export type LlmRequest = z.infer<typeof LlmRequest>;

export const LlmPhaseInput = sharedSchema('runtime/phases#LlmPhaseInput', () =>
  z.strictObject({
    agent: z.string(),
    iteration: z.number().int().nonnegative(),
    /** The run's LLM call number: token chunks on the side channel carry it. */
    llm_call: z.number().int().positive().optional(),
    /** SHA-256 (hex) of the request's JSON text. */
    digest: z.string(),
    /** Only with `request_transport: inline`. */
    request: LlmRequest.optional(),
    /** A typed LLM function whose output schema checks a final reply. */
    output_check: z.string().optional(),
    /** The agent's provider choices (the worker's defaults fill the rest); absent: the worker's provider. */
    provider: ProviderSelection.optional(),
    /**
     * `compaction`: a call that writes the context's summary; `guardrail`: a judge's call (each its own
     * span, not the next request's prefix, no tokens on the side channel).
     */
    purpose: z.enum(['compaction', 'guardrail']).optional(),
    /**
     * The agent has output guardrails: a reply's text tokens are held back. A reply that calls tools
     * publishes them when it is complete; a final answer's never leave the activity (the answer reaches
     * readers checked, with the call's end event), nor does an aborted reply's partial text.
     */
    hold_answer: z.literal(true).optional(),
    /** The agent's `llm_server_error_seconds`; absent (inputs scheduled before it): its default. */
    server_error_seconds: z.number().positive().optional(),
    /**
     * Fast tools the phase may run itself once the model replied, when the reply calls these only (at
     * most `max_calls`): the iteration then needs no workflow task of its own for them (`fusedCalls`).
     */
    fast_tools: z
      .strictObject({
        names: z.array(z.string()),
        max_calls: z.number().int().nonnegative().nullable(),
        /** The batch's iteration and run chain, as its own activity's input would carry them. */
        iteration: z.number().int().nonnegative(),
        run_chain_id: z.string(),
      })
      .optional(),
  }),
);
export type LlmPhaseInput = z.infer<typeof LlmPhaseInput>;

export const ToolCallRequest = sharedSchema('runtime/phases#ToolCallRequest', () =>
  z.strictObject({
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
);
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;

export const ToolBatchInput = sharedSchema('runtime/phases#ToolBatchInput', () =>
  z.strictObject({
    agent: z.string(),
    iteration: z.number().int().nonnegative(),
    calls: z.array(ToolCallRequest),
    /**
     * The run chain's first run id (`firstExecutionRunId`): stable across retries, replays and
     * continue-as-new, different for a new run that reuses the workflow id. Idempotency keys derive from it.
     */
    run_chain_id: z.string().optional(),
    /** Calls of MCP tools, by exposed tool name: the server, the tool's own name, whether it may run again (from the run's spec). */
    mcp_tools: z.record(z.string(), McpToolReference).optional(),
    /**
     * Calls the model call's activity runs with its reply: the attempt that got the reply. A reply lost
     * to a crash is asked again, and the new one may reuse a call id for another call: the key differs.
     */
    reply_attempt: z.number().int().positive().optional(),
  }),
);
export type ToolBatchInput = z.infer<typeof ToolBatchInput>;

/** One finished call, for events: `success: false` only when the step itself failed (spec 7.6). Its content is in `mutations`. */
export const ToolCallReport = sharedSchema('runtime/phases#ToolCallReport', () =>
  z.strictObject({
    tool_call_id: z.string(),
    tool_name: z.string(),
    success: z.boolean(),
    error: z.string().optional(),
    duration_ms: z.number(),
    /** The tool's return value for events where the result content does not show it (images, spec 7.8). */
    result: JsonValue.optional(),
  }),
);
export type ToolCallReport = z.infer<typeof ToolCallReport>;

/** What a SelfRef tool asks the workflow to apply at the next compile boundary (spec 6.2). */
export const MemoryIntent = sharedSchema('runtime/phases#MemoryIntent', () =>
  z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('remember'), text: z.string() }),
    z.strictObject({ kind: z.literal('forget'), experience_id: z.string() }),
  ]),
);
export const CompactionIntent = sharedSchema('runtime/phases#CompactionIntent', () =>
  z.strictObject({
    kind: z.literal('compact'),
    summary: SummaryPayload,
    rendered: z.string(),
    remember: z.array(z.string()),
  }),
);

export const SelfRefIntentRecord = sharedSchema('runtime/phases#SelfRefIntentRecord', () =>
  z.strictObject({
    tool_call_id: z.string(),
    intent: z.discriminatedUnion('kind', [...MemoryIntent.options, CompactionIntent]),
  }),
);
export type SelfRefIntentRecord = z.infer<typeof SelfRefIntentRecord>;

const CustomToolEvent = sharedSchema('runtime/phases#CustomToolEvent', () =>
  z.strictObject({
    tool_call_id: z.string(),
    tool_name: z.string(),
    event_name: z.string(),
    data: JsonObject,
  }),
);

export const ToolBatchResult = sharedSchema('runtime/phases#ToolBatchResult', () =>
  z.strictObject({
    outcome: z.enum(['completed', 'aborted']),
    /** Results and cancellations in declared order, multimodal results last (spec 7.6, deviation 10.c). */
    mutations: z.array(Mutation),
    /** Finished calls in completion order. */
    reports: z.array(ToolCallReport),
    /** Calls that had not finished when the abort arrived. */
    unfinished: z.array(z.string()),
    /** SelfRef intents of finished calls, in declared order (spec 6.2). */
    intents: z.array(SelfRefIntentRecord).default([]),
    /** Events tools emitted while running, in the order they were emitted. */
    custom_events: z.array(CustomToolEvent).optional(),
  }),
);
export type ToolBatchResult = z.infer<typeof ToolBatchResult>;

/** The phase's facts. Content and tool calls live in `mutations` only: history records them once. */
export const LlmPhaseResult = sharedSchema('runtime/phases#LlmPhaseResult', () =>
  z.strictObject({
    outcome: z.enum(['completed', 'aborted']),
    /** `[AssistantMessageMutation]`, `[]` for an empty reply, or `[AssistantTruncatedMutation]` on abort. */
    mutations: z.array(Mutation),
    /** On abort: the calls the provider had begun to stream (reported on events, never committed). */
    partial_tool_calls: z.array(z.strictObject({ id: z.string(), name: z.string() })).optional(),
    usage: TokenUsage.nullable(),
    finish_reason: z.string().nullable(),
    duration_ms: z.number(),
    /**
     * Whether the request went to the provider streamed: a profile may send plain a call the run asked
     * to stream. Absent from results recorded before it, and when nothing was sent.
     */
    streamed: z.boolean().optional(),
    /** For typed LLM functions: the final reply checked against the output schema. */
    output_check: z
      .union([
        z.strictObject({ ok: z.literal(true), value: JsonValue }),
        z.strictObject({ ok: z.literal(false), error: z.string() }),
      ])
      .optional(),
    /**
     * The reply's calls, run by the phase itself right after the reply (`fast_tools` of the input allowed
     * it): the batch's result, as a local activity of fast tools would have returned it.
     */
    tool_batch: ToolBatchResult.optional(),
  }),
);
export type LlmPhaseResult = z.infer<typeof LlmPhaseResult>;

/**
 * A tool batch's progress in its heartbeat details: the calls that finished so far (by position in the
 * batch) with everything their result carries, so a retried attempt keeps them and runs only the rest.
 */
export const ToolBatchCheckpoint = sharedSchema('runtime/phases#ToolBatchCheckpoint', () =>
  z.object({
    iteration: z.number(),
    /** The batch's call ids in order: a checkpoint applies only to the very same batch. */
    call_ids: z.array(z.string()),
    done: z.array(
      z.strictObject({
        index: z.number().int().nonnegative(),
        content: z.string(),
        report: ToolCallReport,
        intent: SelfRefIntentRecord.shape.intent.optional(),
        multimodal: MultimodalToolResultMutation.optional(),
        custom_events: z.array(CustomToolEvent),
      }),
    ),
  }),
);
export type ToolBatchCheckpoint = z.infer<typeof ToolBatchCheckpoint>;

/**
 * The last failed attempt of a model call, carried in its heartbeat details from attempt to attempt:
 * a retry budget that runs out while an attempt is in flight ends in a timeout that carries only the
 * heartbeat details, and the run still reports the provider's error.
 */
export const AttemptFailure = sharedSchema('runtime/phases#AttemptFailure', () =>
  z.object({
    type: z.string(),
    message: z.string(),
    /** How many attempts in a row failed with this very message (a deterministic error repeats). */
    repeats: z.number().int().positive().optional(),
    /**
     * When (ISO time) the call's attempts began failing without progress, from its first HTTP 500:
     * `llm_server_error_seconds` after it, the next 500 ends the call.
     */
    server_errors_since: z.string().optional(),
  }),
);
export type AttemptFailure = z.infer<typeof AttemptFailure>;

/** The attempt failure recorded in heartbeat details, if any. */
export function attemptFailureIn(details: unknown): AttemptFailure | undefined {
  const parsed = AttemptFailure.safeParse((details as { last_failure?: unknown } | null)?.last_failure);
  return parsed.success ? parsed.data : undefined;
}

/** Input of workflow `llmFunction`. */
export const LlmFunctionInput = sharedSchema('runtime/phases#LlmFunctionInput', () =>
  z.strictObject({
    function: z.string().min(1).describe("A registered function's name."),
    args: JsonObject.describe("The function's arguments, checked with its input schema."),
  }),
);
export type LlmFunctionInput = z.infer<typeof LlmFunctionInput>;

/** A function resolved by a worker: run like an agent whose prompt is the rendered template. */
export const PreparedFunction = sharedSchema('runtime/phases#PreparedFunction', () =>
  z.strictObject({
    agent: AgentSpec,
    seed: z.array(Message),
    max_repairs: z.number().int().nonnegative(),
  }),
);
export type PreparedFunction = z.infer<typeof PreparedFunction>;

/** The text of the reply the phase's patches carry (the partial text after an abort). */
export function replyContent(result: LlmPhaseResult): string {
  for (const mutation of result.mutations) {
    if (mutation.type === 'AssistantMessageMutation') return mutation.content ?? '';
    if (mutation.type === 'AssistantTruncatedMutation') return mutation.partial_content;
  }
  return '';
}

/** The tool calls the reply asks for (none after an abort). */
export function replyToolCalls(result: LlmPhaseResult): ToolCall[] {
  const assistant = result.mutations.find((mutation) => mutation.type === 'AssistantMessageMutation');
  return assistant?.type === 'AssistantMessageMutation' ? (assistant.tool_calls ?? []) : [];
}

/** The reply's tool calls as a batch's requests. */
export function replyCallRequests(result: LlmPhaseResult): ToolCallRequest[] {
  return replyToolCalls(result).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
}

/** Answer of the workflow's `compiledRequest` query: one page of the request's JSON text. */
export const RequestPage = sharedSchema('runtime/phases#RequestPage', () =>
  z.strictObject({
    digest: z.string(),
    page: z.number().int().nonnegative(),
    /** Pages of the text from `from` on. */
    pages: z.number().int().positive(),
    text: z.string(),
    /** Where page 0 starts: a reader that holds the previous request asks only for what follows its prefix. */
    from: z.number().int().nonnegative().optional(),
    /** The stable prefix's length (see RequestText): where the next call's reader may start. */
    stable: z.number().int().nonnegative().optional(),
    /** Where the messages array starts: the reader parses the rest without the messages. */
    messages_at: z.number().int().nonnegative().optional(),
  }),
);
export type RequestPage = z.infer<typeof RequestPage>;
