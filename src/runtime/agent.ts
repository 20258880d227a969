import { z } from 'zod';
import { ToolPolicy } from './tool-policy';
import { GuardrailSettings } from './guardrails';
import { JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';
import { ContextSettings } from './context-settings';
import { BudgetSettings, NO_BOUNDS } from './budget';
import { ProviderSelection } from './provider';
import { McpServerConfig, McpToolReference } from './mcp-settings';
import { WaitSettings } from './wait-settings';
import { NotifySettings } from './notify';

/** The default of `llm_server_error_seconds`: five minutes of HTTP 500s without progress end a call. */
export const DEFAULT_LLM_SERVER_ERROR_SECONDS = 300;

/** Timeouts and retry budgets of an agent's phases. Seconds, so agent files stay readable JSON. */
export const AgentLimits = sharedSchema('runtime/agent#AgentLimits', () =>
  z.strictObject({
    /** One LLM attempt, start to close (the provider HTTP timeout is set a little below it). */
    llm_timeout_seconds: z.number().positive().default(300),
    /**
     * How long an LLM call keeps retrying while the provider is unavailable (429, 5xx, network errors,
     * broken streams), with backoff up to 60 s and the provider's retry-after. Attempts are unbounded
     * within it unless `llm_max_attempts` is set.
     */
    llm_retry_budget_seconds: z.number().positive().default(1800),
    /**
     * How long one LLM call keeps retrying HTTP 500 answers without progress: from its first 500, once
     * nothing but 5xx answers and failed connections came for this long, the next 500 fails the call
     * (`ProviderUnavailable`). A 500 whose body changes on every try (a request id in it) never repeats
     * word for word; this bounds it far under the retry budget, which outages (429, 502 to 504, 529,
     * `retry-after`) keep.
     */
    llm_server_error_seconds: z.number().positive().default(DEFAULT_LLM_SERVER_ERROR_SECONDS),
    /** An optional cap on attempts inside the budget; null: as many as the budget allows. */
    llm_max_attempts: z.number().int().positive().nullable().default(null),
    /**
     * Opt-in: the model calls (not a compaction's summary) run as local activities in the workflow task
     * that needs them, with the request in their input: no dispatch of their own (docs/agents-and-tools.md#model-calls-as-local-activities
     * says when that is unsafe: long calls, streaming to followers, prompt aborts).
     */
    llm_local_activity: z.boolean().default(false),
    /** A phase without a heartbeat for this long is retried elsewhere (a dead worker). */
    heartbeat_timeout_seconds: z.number().positive().default(10),
    /** Per tool call, unless the tool sets its own. */
    tool_timeout_seconds: z.number().positive().default(60),
    tool_batch_max_attempts: z.number().int().positive().default(3),
    /** A tool result larger than this becomes an error result the model sees. */
    max_tool_result_bytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024),
    /** Per image a tool returns (files are sent as data URLs); above it the call fails with an error result. */
    max_image_bytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    /** How long an aborted run waits for its phase to hand back partial results before giving up on them. */
    abort_wait_seconds: z.number().positive().default(10),
    /** One user message (signal or update); a larger one is refused with a visible warning. */
    max_user_message_bytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024),
    /** All user messages waiting for their turn at once; more are refused until the run catches up. */
    max_queued_message_bytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    /** How deep `selfref_fork` may nest (a top-level run has depth 0). */
    max_fork_depth: z.number().int().nonnegative().default(3),
    /**
     * How deep sub-agent calls may nest (a top-level run has depth 0): a call that would start a run
     * deeper than this gets an error result instead, so agents calling each other in a cycle stop.
     */
    max_agent_depth: z.number().int().nonnegative().default(3),
    /** Gated tool calls undecided for this long are rejected with reason `approval timed out`; null waits forever. */
    approval_timeout_seconds: z.number().positive().nullable().default(null),
    /**
     * A batch routed to another task queue (`tool_task_queues`) that no worker picks up within this long
     * gives its calls an error result naming the queue, instead of waiting forever.
     */
    routed_tool_wait_seconds: z.number().positive().default(300),
  }),
);
export type AgentLimits = z.infer<typeof AgentLimits>;

/**
 * Another agent this one may call (`subagents`) or hand the conversation to (`handoffs`): its name, or
 * the name with the tool's name and description the model sees.
 */
export const AgentReference = sharedSchema('runtime/agent#AgentReference', () =>
  z.union([
    z.string().min(1),
    z.strictObject({
      agent: z.string().min(1),
      /** The tool's name (default `<agent>` for a sub-agent, `transfer_to_<agent>` for a handoff), provider-safe. */
      tool_name: z
        .string()
        .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)')
        .optional(),
      /** What the model reads about when to use it (default: from the agent's name and instructions). */
      description: z.string().min(1).optional(),
    }),
  ]),
);
export type AgentReference = z.infer<typeof AgentReference>;

/** An agent is data: any service can read, store and reason about it. */
export const AgentDefinition = sharedSchema('runtime/agent#AgentDefinition', () =>
  z.strictObject({
    name: z.string().min(1),
    instructions: z.string(),
    /** Provider model; defaults to the provider's `model`, then the worker's PATCHLOOP_MODEL. */
    model: z.string().min(1).optional(),
    /** The model server and its kind (profile, wire format); the worker's environment gives what is left out. */
    provider: ProviderSelection.optional(),
    /** Names of registered tools. */
    tools: z.array(z.string().min(1)).default([]),
    /** MCP servers whose tools the agent offers besides `tools` (listed when a run starts, again at each continue-as-new). */
    mcp_servers: z.array(McpServerConfig).default([]),
    /**
     * Tools (of `tools`, or MCP tools by the name the model sees) whose calls wait for a person's decision
     * before they run (the `approve` update).
     */
    needs_approval: z.array(z.string().min(1)).default([]),
    /**
     * Tool policy (docs/guardrails.md#tool-policy): rules read in order, the first that matches a call
     * deciding it (`allow`, `deny`: an error result and the tool never runs, `approve`: a person decides).
     * A call no rule matches is decided by `needs_approval` (approve) or allowed.
     */
    policy: ToolPolicy.optional(),
    /**
     * Guardrails (docs/guardrails.md): checks run on the run's input and user messages, on tool calls'
     * arguments and results, and on answers before any reader sees them (their tokens are held).
     */
    guardrails: GuardrailSettings.optional(),
    /**
     * Tools (of `tools`, or MCP tools by the name the model sees) that run on another task queue, served
     * by `patchloop worker --tools-only` (which needs the agent, and connects to its MCP servers itself): a
     * batch's calls go out as one batch activity per queue, concurrently. Tools name a queue in code too
     * (`defineTool({ taskQueue })`); this map wins.
     */
    tool_task_queues: z.record(z.string().min(1), z.string().min(1)).default({}),
    /**
     * Agents this one calls as tools (served by the same workers): each call is a child run of that agent,
     * its answer the call's result.
     */
    subagents: z.array(AgentReference).default([]),
    /** Agents this one may hand the conversation to (`transfer_to_<agent>` tools): they carry on the same run. */
    handoffs: z.array(AgentReference).default([]),
    /** SelfRef memory tools and snapshot-driven prompts (spec sections 5 and 6). */
    selfref: z.boolean().default(false),
    /**
     * Durable waits: the model may call `sleep` (a timer, no worker slot while it waits) and, for the
     * event names listed, `wait_for_event` (an event another service delivers with `deliver_event`).
     * Absent: neither tool.
     */
    waits: WaitSettings.optional(),
    stream: z.boolean().default(true),
    /** Budget of individual tool calls per run (spec 7.5); null is unlimited. */
    max_tool_calls: z.number().int().nonnegative().nullable().default(null),
    /** Extra provider options (temperature, ...), sent as given. */
    llm_options: JsonObject.default({}),
    limits: AgentLimits.default(AgentLimits.parse({})),
    /** How runs of this agent keep inside the model's context window (compaction). */
    context: ContextSettings.default(() => ContextSettings.parse({})),
    /** What a run of this agent may spend (tokens, calls, dollars, time), checked before every step. */
    budget: BudgetSettings.default(() => BudgetSettings.parse({})),
    /**
     * A call when a run of this agent ends (docs/notifications.md): a run's own `notify` wins. Top-level
     * runs only: not sub-agent or fork runs, not sessions.
     */
    notify: NotifySettings.optional(),
  }),
);
export type AgentDefinition = z.infer<typeof AgentDefinition>;
export type AgentDefinitionInput = z.input<typeof AgentDefinition>;

/** What the model and the prompt need to know about one tool. */
export const ToolDescriptor = sharedSchema('runtime/agent#ToolDescriptor', () =>
  z.strictObject({
    name: z.string(),
    description: z.string(),
    /** JSON Schema of the arguments, as zod produces it. */
    parameters: JsonObject,
    best_practices: z.array(z.string()).default([]),
    prompt_injection: z.string().optional(),
    timeout_seconds: z.number().positive().optional(),
    /** A tool that retries itself (`retry`): its attempts, and the longest it waits between them in all. */
    max_attempts: z.number().int().positive().optional(),
    retry_wait_seconds: z.number().nonnegative().optional(),
    /** `defineTool({ fast })`: batches of fast calls only run as local activities. */
    fast: z.boolean().optional(),
    mcp: McpToolReference.optional(),
    /** A tool the workflow carries out itself: a call of a sub-agent (a child run), or a handoff to an agent. */
    agent_call: z.strictObject({ kind: z.enum(['subagent', 'handoff']), agent: z.string() }).optional(),
    /** A wait the workflow carries out itself with a timer (`waits`): `sleep` or `wait_for_event`. */
    durable_wait: z.enum(['sleep', 'wait_for_event']).optional(),
  }),
);
export type ToolDescriptor = z.infer<typeof ToolDescriptor>;

/** The model an agent's runs use: its own `model`, else its provider's, else the worker's default. */
export function agentModel(agent: Pick<AgentDefinition, 'model' | 'provider'>, defaultModel: string): string {
  return agent.model ?? agent.provider?.model ?? defaultModel;
}

/** An agent resolved by a worker: the definition plus its tools' descriptors and the model in use. */
export const AgentSpec = sharedSchema('runtime/agent#AgentSpec', () =>
  AgentDefinition.extend({
    model: z.string().min(1),
    /**
     * A spec records its budget whole. One recorded before budgets existed has none: its runs go on
     * unbounded, as they began, instead of meeting bounds their agent never had.
     */
    budget: BudgetSettings.default(() => BudgetSettings.parse(NO_BOUNDS)),
    tool_descriptors: z.array(ToolDescriptor),
    /**
     * The worker sends payloads over its threshold by reference (External Storage): no result, batch,
     * fork context or continue-as-new state meets Temporal's 2 MB payload limit. Without it, workflows
     * keep what they send under a budget instead.
     */
    // Absent in specs recorded by workers that predate it: those runs keep their old behaviour, unchecked.
    payloads_by_reference: z.boolean().optional(),
    /**
     * With payloads by reference: the size from which the worker's store takes a payload. A run's result
     * stays under it, so clients without patchloop's data converter read it (absent in older specs: 256 KiB).
     */
    payload_threshold_bytes: z.number().int().nonnegative().optional(),
    /**
     * The namespace has patchloop's search attributes (the worker checked, or registered them): runs keep
     * them current. Absent in specs recorded before: those runs replay without upserts.
     */
    search_attributes: z.boolean().optional(),
  }),
);
export type AgentSpec = z.infer<typeof AgentSpec>;
