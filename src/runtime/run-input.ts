import { z } from 'zod';
import { ChatMessages, Message } from '../context';
import { AgentRunState, ContinueAsNewPolicy } from './carried-state';
import { TokenUsage } from './usage';
import { ContextOverride } from './context-settings';
import { BudgetOverride, BudgetReport } from './budget';
import { sharedSchema } from '../context/shared-schema';
import { NotifySettings } from './notify';
import { PrincipalName } from './principal';
import { ForkSource } from './fork-source';
import { ToolRecordings } from './tool-recordings';

/** Where a fork child comes from (spec 6.6): its ids and the parent's context it starts from. */
const ForkOrigin = sharedSchema('runtime/run-input#ForkOrigin', () =>
  z.strictObject({
    fork_id: z.string(),
    parent_fork_id: z.string().nullable(),
    depth: z.number().int().positive(),
    source_memory_key: z.string(),
    memory_key: z.string(),
    context: z.array(Message),
  }),
);

/** The run that called this one as a sub-agent: where its answer goes and where its decisions are asked. */
export const CallerOrigin = sharedSchema('runtime/run-input#CallerOrigin', () =>
  z.strictObject({
    /** The calling run's workflow id (signals reach the current run of its chain). */
    workflow_id: z.string(),
    agent: z.string(),
    tool_call_id: z.string(),
    /** How deep this run is in the call tree (the top-level run has depth 0). */
    depth: z.number().int().positive(),
  }),
);
export type CallerOrigin = z.infer<typeof CallerOrigin>;

/** Input of workflow `agentRun` (published as schemas/agent-run-input.schema.json). */
export const AgentRunInput = sharedSchema('runtime/run-input#AgentRunInput', () =>
  z.strictObject({
    agent: z.string().min(1).describe("A registered agent's name."),
    input: z.string().describe("The user's request."),
    history: ChatMessages.nullish().describe(
      'Earlier conversation (OpenAI chat shape); checked before the run starts. null means none (the HTTP API payload shorthand sends [] as null).',
    ),
    model: z
      .string()
      .min(1)
      .optional()
      .describe("Overrides the agent's model for this run (an evaluation's candidate, docs/fork-and-evals.md)."),
    max_tool_calls: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .optional()
      .describe("Overrides the agent's tool-call budget for this run (null: unlimited)."),
    /**
     * How the LLM activity gets the compiled request: `query` (default) pulls it from the workflow by
     * digest, so history grows with new content only; `inline` passes the whole request as activity
     * input (recorded in history every iteration: quadratic growth, for comparison benchmarks only).
     */
    request_transport: z
      .enum(['query', 'inline'])
      .default('query')
      .describe('query (default): O(new content) history; inline: for comparison benchmarks only.'),
    context: ContextOverride.optional().describe(
      "Overrides the agent's context settings for this run (window_tokens, compact_at, keep_recent_tokens, strategy).",
    ),
    budget: BudgetOverride.optional().describe(
      "Overrides the agent's budget for this run (max_total_tokens, max_llm_calls, max_cost_usd, on_exhausted, ...).",
    ),
    notify: NotifySettings.optional().describe(
      "A call when the run ends (docs/notifications.md); wins over the agent's notify.",
    ),
    principal: PrincipalName.optional().describe(
      'Who started the run through the gateway (docs/gateway.md); set by the gateway, not by its callers.',
    ),
    fork: ForkOrigin.optional().describe('Set by a parent run for a selfref_fork child; not for callers.'),
    caller: CallerOrigin.optional().describe('Set by a parent run for a sub-agent child; not for callers.'),
    fork_from: ForkSource.optional().describe(
      'Starts the run as a fork of another run before its model request at iteration `at` (docs/fork-and-evals.md): its context exactly, with the overrides given; `input` is then unused.',
    ),
    tool_recordings: ToolRecordings.optional().describe(
      "Answers the run's tool calls from a recorded run's results instead of running them (evaluations, docs/fork-and-evals.md).",
    ),
    continue_as_new: ContinueAsNewPolicy.default(ContinueAsNewPolicy.parse({})).describe(
      'When the run continues as new at an iteration boundary (besides Temporal suggesting it).',
    ),
    state: AgentRunState.optional().describe('Carried by continue-as-new; not for callers.'),
  }),
);
export type AgentRunInput = z.infer<typeof AgentRunInput>;
export type AgentRunInputWire = z.input<typeof AgentRunInput>;

/** A user message the run accepted but the model never saw (the run ended first). */
export const UnprocessedMessage = sharedSchema('runtime/run-input#UnprocessedMessage', () =>
  z.strictObject({
    content: z.string(),
  }),
);
export type UnprocessedMessage = z.infer<typeof UnprocessedMessage>;

/** An event no wait took before its run ended (`unprocessed_events` of a result). */
export const UnprocessedEvent = sharedSchema('runtime/run-input#UnprocessedEvent', () =>
  z.strictObject({
    name: z.string(),
    key: z.string().optional(),
    received_at: z.string(),
    payload_bytes: z.number().int().nonnegative(),
  }),
);
export type UnprocessedEvent = z.infer<typeof UnprocessedEvent>;

/** Result of workflow `agentRun` (schemas/agent-run-result.schema.json). */
export const AgentRunResult = sharedSchema('runtime/run-input#AgentRunResult', () =>
  z.strictObject({
    /** `budget_exhausted`: a limit of `budget` would have been passed by the next step, which never started. */
    status: z.enum(['completed', 'aborted', 'budget_exhausted']),
    /** The final answer (`completed`); null otherwise, or when `answer_omitted`. */
    answer: z.string().nullable(),
    /**
     * The answer is too large for the result (it would pass the payload store's threshold, and only
     * patchloop's data converter could read it): it is the content of the transcript's last message.
     * The TypeScript client fills `answer` in.
     */
    answer_omitted: z.literal(true).optional(),
    /** Empty when `transcript_omitted`. */
    transcript: z.array(Message),
    /** Summed over every LLM call of the run (spec 7.9); null when no call reported usage. */
    usage: TokenUsage.nullable(),
    abort_reason: z.string().optional(),
    /** With a budget set: its limits (extensions included), what was spent and which limits stopped the run. */
    budget: BudgetReport.optional(),
    /**
     * Accepted user messages that are not in the transcript because the run ended before its next
     * compile boundary (an abort, for example), in arrival order. Absent when there are none.
     */
    unprocessed_messages: z.array(UnprocessedMessage).optional(),
    /**
     * Events delivered (`deliver_event`) that no wait took before the run ended, oldest first: which,
     * when, and how large their payload was (the payloads stay with their senders). Absent when none.
     */
    unprocessed_events: z.array(UnprocessedEvent).optional(),
    /**
     * The transcript is left out: it would make the result pass the payload store's threshold (read it
     * by the paged `transcriptPage` query; the TypeScript client does, and fills `transcript` in), or
     * the run is a fork or sub-agent child (the parent uses its length only).
     */
    transcript_omitted: z.literal(true).optional(),
    /** Messages in the transcript (with `transcript_omitted`). */
    transcript_length: z.number().int().nonnegative().optional(),
    /** Set when the transcript was left out for its size: the query that reads it, page by page. */
    transcript_query: z.literal('transcriptPage').optional(),
  }),
);
export type AgentRunResult = z.infer<typeof AgentRunResult>;

/** How a child run stands, as a parent that did not start it learns (`awaitAgentRun`): running, ended, or failed. */
export type AgentRunOutcome =
  | { status: 'running' }
  | { status: 'closed'; result: AgentRunResult }
  | { status: 'failed'; error_type: string; message: string; spent?: RunSpending };

/**
 * What a sub-agent run spent before it failed, in its failure's details (`{"spent": ...}`): its caller
 * charges it as it charges a result's (a failed child spent all the same).
 */
export interface RunSpending {
  usage: TokenUsage | null;
  /** Model calls its budget counted (0 without a budget). */
  llm_calls: number;
}

/** A child run's failure as its parent reads it: the failure's cause (its type and message) when it has one. */
export function failedRunOutcome(
  error: { message: string; cause?: unknown },
  fallbackType: string,
): Extract<AgentRunOutcome, { status: 'failed' }> {
  const cause = error.cause as { type?: string; name?: string; message?: string; details?: unknown } | undefined;
  const spent = spendingIn(cause?.details);
  return {
    status: 'failed',
    error_type: cause?.type ?? cause?.name ?? fallbackType,
    message: cause?.message ?? error.message,
    ...(spent ? { spent } : {}),
  };
}

/** The `{"spent": ...}` entry of a failure's details, if one is there and well formed. */
function spendingIn(details: unknown): RunSpending | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    const spent = (detail as { spent?: unknown } | null)?.spent;
    if (spent === null || typeof spent !== 'object') continue;
    const { usage, llm_calls: calls } = spent as Record<string, unknown>;
    const parsed = TokenUsage.nullable().safeParse(usage);
    if (parsed.success && typeof calls === 'number' && Number.isInteger(calls) && calls >= 0)
      return { usage: parsed.data, llm_calls: calls };
  }
  return undefined;
}
