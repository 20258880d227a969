import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import type { TokenUsage } from './usage';
import { withOverride } from './context-settings';

const limit = () => z.number().positive().nullable();

/** Prices per million tokens, in US dollars: what `max_cost_usd` counts with. */
export const TokenPrices = sharedSchema('runtime/budget#TokenPrices', () =>
  z.strictObject({
    input_per_million: z.number().nonnegative(),
    /** Prompt tokens the provider served from its cache; null: priced as input. */
    cached_input_per_million: z.number().nonnegative().nullable().default(null),
    output_per_million: z.number().nonnegative(),
  }),
);
export type TokenPrices = z.infer<typeof TokenPrices>;

/**
 * The bounds every run has unless its agent, its input or its session says otherwise (null: none): a
 * looping agent ends `budget_exhausted` instead of calling the model for as long as nobody looks. About
 * a hundred iterations, and at most a few dollars at today's prices (docs/budgets.md).
 */
export const DEFAULT_BUDGET_LIMITS = { max_llm_calls: 100, max_total_tokens: 1_000_000 } as const;

/** The default bounds lifted: what a budget says to have none. */
export const NO_BOUNDS = { max_llm_calls: null, max_total_tokens: null } as const;

/** The budget's fields without their defaults: the settings add them, an override names only some. */
const budgetFields = () => ({
  max_total_tokens: limit().describe(
    `Input and output tokens of all model calls (default ${DEFAULT_BUDGET_LIMITS.max_total_tokens}; null: no limit).`,
  ),
  max_input_tokens: limit().describe('Prompt tokens of all model calls.'),
  max_output_tokens: limit().describe('Completion tokens of all model calls.'),
  max_llm_calls: limit().describe(
    `Model calls, compaction calls included (default ${DEFAULT_BUDGET_LIMITS.max_llm_calls}; null: no limit).`,
  ),
  max_cost_usd: limit().describe('Dollars at `prices`; needs `prices`.'),
  max_wall_seconds: limit().describe('Seconds since the run (or session) started.'),
  prices: TokenPrices.nullable(),
  on_exhausted: z
    .enum(['stop', 'ask'])
    .describe(
      'stop: the run ends with status budget_exhausted; ask: it waits (awaiting_budget) for an extend_budget update or an abort.',
    ),
});

/**
 * What a run may spend (`budget` in an agent definition, overridable per run and per session). Checked
 * before every model call, with that call's estimate, and before every tool batch: a run never starts a
 * call it cannot afford. Null: no limit; `DEFAULT_BUDGET_LIMITS` bound what is not set.
 */
export const BudgetSettings = sharedSchema('runtime/budget#BudgetSettings', () => {
  const fields = budgetFields();
  return z.strictObject({
    max_total_tokens: fields.max_total_tokens.default(DEFAULT_BUDGET_LIMITS.max_total_tokens),
    max_input_tokens: fields.max_input_tokens.default(null),
    max_output_tokens: fields.max_output_tokens.default(null),
    max_llm_calls: fields.max_llm_calls.default(DEFAULT_BUDGET_LIMITS.max_llm_calls),
    max_cost_usd: fields.max_cost_usd.default(null),
    max_wall_seconds: fields.max_wall_seconds.default(null),
    prices: fields.prices.default(null),
    on_exhausted: fields.on_exhausted.default('stop'),
  });
});
export type BudgetSettings = z.infer<typeof BudgetSettings>;

/** A run's or session's override of its agent's budget: only the fields it names (no defaults: the agent's stay). */
export const BudgetOverride = sharedSchema('runtime/budget#BudgetOverride', () =>
  z.strictObject(budgetFields()).partial(),
);
export type BudgetOverride = z.infer<typeof BudgetOverride>;

/** The limits a budget can have, as `spent` and `limit` name them. */
export const BUDGET_LIMITS = [
  'max_total_tokens',
  'max_input_tokens',
  'max_output_tokens',
  'max_llm_calls',
  'max_cost_usd',
  'max_wall_seconds',
] as const;
export type BudgetLimit = (typeof BUDGET_LIMITS)[number];

/** What a run has spent, folded from its model calls (compaction calls included); carried across continue-as-new. */
export const UsageLedger = sharedSchema('runtime/budget#UsageLedger', () =>
  z.strictObject({
    input_tokens: z.number().nonnegative(),
    cached_input_tokens: z.number().nonnegative(),
    output_tokens: z.number().nonnegative(),
    llm_calls: z.number().int().nonnegative(),
    cost_usd: z.number().nonnegative(),
    /** Workflow time the run (or session) started: wall seconds count from it. Null until it starts. */
    started_at_ms: z.number().nullable(),
    /** What `extend_budget` added to each limit so far. */
    extended: z.record(z.string(), z.number()).default({}),
  }),
);
export type UsageLedger = z.infer<typeof UsageLedger>;

export function emptyUsageLedger(): UsageLedger {
  return {
    input_tokens: 0,
    cached_input_tokens: 0,
    output_tokens: 0,
    llm_calls: 0,
    cost_usd: 0,
    started_at_ms: null,
    extended: {},
  };
}

/** The `extend_budget` update: what to add to each limit (at least one). */
export const BudgetExtension = sharedSchema('runtime/budget#BudgetExtension', () =>
  z
    .strictObject({
      tokens: z
        .number()
        .positive()
        .optional()
        .describe('Added to max_total_tokens, max_input_tokens and max_output_tokens that are set.'),
      llm_calls: z.number().int().positive().optional(),
      cost_usd: z.number().positive().optional(),
      wall_seconds: z.number().positive().optional(),
    })
    .refine((value) => Object.keys(value).length > 0, 'name at least one of tokens, llm_calls, cost_usd, wall_seconds'),
);
export type BudgetExtension = z.infer<typeof BudgetExtension>;

/** The price of one call's usage. */
export function costOf(
  usage: Pick<TokenUsage, 'prompt_tokens' | 'completion_tokens' | 'cached_prompt_tokens'>,
  prices: TokenPrices | null,
): number {
  if (!prices) return 0;
  const cached = Math.min(usage.cached_prompt_tokens ?? 0, usage.prompt_tokens);
  const cachedPrice = prices.cached_input_per_million ?? prices.input_per_million;
  return (
    ((usage.prompt_tokens - cached) * prices.input_per_million +
      cached * cachedPrice +
      usage.completion_tokens * prices.output_per_million) /
    1_000_000
  );
}

/** The ledger after one model call. */
export function recordCall(ledger: UsageLedger, usage: TokenUsage | null, prices: TokenPrices | null): UsageLedger {
  return {
    ...ledger,
    llm_calls: ledger.llm_calls + 1,
    input_tokens: ledger.input_tokens + (usage?.prompt_tokens ?? 0),
    cached_input_tokens: ledger.cached_input_tokens + (usage?.cached_prompt_tokens ?? 0),
    output_tokens: ledger.output_tokens + (usage?.completion_tokens ?? 0),
    cost_usd: ledger.cost_usd + (usage ? costOf(usage, prices) : 0),
  };
}

/**
 * The ledger after a child run's usage: its tokens and their cost, and `llmCalls` of its calls (a
 * sub-agent's count against its caller's budget; a fork's calls are its own).
 */
export function recordChildUsage(
  ledger: UsageLedger,
  usage: TokenUsage | null,
  prices: TokenPrices | null,
  llmCalls = 0,
): UsageLedger {
  const withCall = usage ? recordCall(ledger, usage, prices) : ledger;
  return { ...withCall, llm_calls: ledger.llm_calls + llmCalls };
}

/** Each limit with what `extend_budget` added to it. */
export function effectiveLimits(settings: BudgetSettings, ledger: UsageLedger): Record<BudgetLimit, number | null> {
  const limits = {} as Record<BudgetLimit, number | null>;
  for (const name of BUDGET_LIMITS) {
    const base = settings[name];
    limits[name] = base === null ? null : base + (ledger.extended[name] ?? 0);
  }
  return limits;
}

/** What has been spent, by limit. */
export function spentOf(ledger: UsageLedger, nowMs: number): Record<BudgetLimit, number> {
  return {
    max_total_tokens: ledger.input_tokens + ledger.output_tokens,
    max_input_tokens: ledger.input_tokens,
    max_output_tokens: ledger.output_tokens,
    max_llm_calls: ledger.llm_calls,
    max_cost_usd: Math.round(ledger.cost_usd * 1e6) / 1e6,
    max_wall_seconds: ledger.started_at_ms === null ? 0 : Math.floor((nowMs - ledger.started_at_ms) / 1000),
  };
}

/** The completion a request's options reserve (`max_completion_tokens`, else `max_tokens`); 0 when none. */
export function reservedOutputTokens(llmOptions: Record<string, unknown>): number {
  const reserved = llmOptions['max_completion_tokens'] ?? llmOptions['max_tokens'];
  return typeof reserved === 'number' ? reserved : 0;
}

/** What the next step would cost: a model call's estimated prompt and reserved completion, or nothing (a tool batch). */
export interface StepEstimate {
  input_tokens: number;
  output_tokens: number;
  llm_calls: number;
}

/**
 * The limits the run would pass by taking the next step (empty: it may). A limit is passed when what
 * was spent plus the step's estimate goes over it; wall time when it has run out.
 */
export function exceededLimits(
  settings: BudgetSettings,
  ledger: UsageLedger,
  nowMs: number,
  step: StepEstimate,
): BudgetLimit[] {
  const limits = effectiveLimits(settings, ledger);
  const spent = spentOf(ledger, nowMs);
  const cost = costOf({ prompt_tokens: step.input_tokens, completion_tokens: step.output_tokens }, settings.prices);
  const next: Record<BudgetLimit, number> = {
    max_total_tokens: spent.max_total_tokens + step.input_tokens + step.output_tokens,
    max_input_tokens: spent.max_input_tokens + step.input_tokens,
    max_output_tokens: spent.max_output_tokens + step.output_tokens,
    max_llm_calls: spent.max_llm_calls + step.llm_calls,
    max_cost_usd: ledger.cost_usd + cost,
    max_wall_seconds: spent.max_wall_seconds,
  };
  return BUDGET_LIMITS.filter((name) => {
    const max = limits[name];
    if (max === null) return false;
    return name === 'max_wall_seconds' ? next[name] >= max : next[name] > max;
  });
}

/** The settings a run uses, and the rule zod cannot state: a cost limit needs prices. */
export function effectiveBudget(agent: BudgetSettings, override?: BudgetOverride | null): BudgetSettings {
  return withOverride(agent, override);
}

export function budgetProblem(settings: BudgetSettings): string | null {
  if (settings.max_cost_usd !== null && settings.prices === null)
    return 'budget.max_cost_usd needs budget.prices (input_per_million, output_per_million) to count cost';
  return null;
}

/** The result's account of a budget: its limits, what was spent, and which limits stopped the run. */
export const BudgetReport = sharedSchema('runtime/budget#BudgetReport', () =>
  z.strictObject({
    limit: z.record(z.string(), z.number().nullable()),
    spent: z.record(z.string(), z.number()),
    exceeded: z.array(z.string()),
  }),
);
export type BudgetReport = z.infer<typeof BudgetReport>;

export function budgetReport(
  settings: BudgetSettings,
  ledger: UsageLedger,
  nowMs: number,
  exceeded: BudgetLimit[],
): BudgetReport {
  return { limit: effectiveLimits(settings, ledger), spent: spentOf(ledger, nowMs), exceeded };
}

/** The ledger after an extension: each named amount added to the limits it extends. */
export function extendLedger(ledger: UsageLedger, extension: BudgetExtension): UsageLedger {
  const extended = { ...ledger.extended };
  const add = (name: BudgetLimit, amount: number | undefined) => {
    if (amount !== undefined) extended[name] = (extended[name] ?? 0) + amount;
  };
  add('max_total_tokens', extension.tokens);
  add('max_input_tokens', extension.tokens);
  add('max_output_tokens', extension.tokens);
  add('max_llm_calls', extension.llm_calls);
  add('max_cost_usd', extension.cost_usd);
  add('max_wall_seconds', extension.wall_seconds);
  return { ...ledger, extended };
}

/**
 * What is left of a budget, as a budget of its own: for a child run (a `selfref_fork`, a sub-agent) that
 * spends beside its parent. Each limit is what the parent has not spent, shared by the `parts` children
 * that start together (wall time is not shared: they run at once), at least a token's worth, so a child
 * of a spent parent stops at its first step; a child never waits for an extension nobody knows about.
 */
export function remainingBudget(
  settings: BudgetSettings,
  ledger: UsageLedger,
  nowMs: number,
  parts = 1,
): BudgetSettings {
  const limits = effectiveLimits(settings, ledger);
  const spent = spentOf(ledger, nowMs);
  const left = (name: BudgetLimit) => {
    const max = limits[name];
    if (max === null) return null;
    const left = max - spent[name];
    const cost = name === 'max_cost_usd';
    const share = parts === 1 || name === 'max_wall_seconds' ? left : cost ? left / parts : Math.floor(left / parts);
    return Math.max(share, cost ? 1e-9 : 1);
  };
  return {
    ...settings,
    max_total_tokens: left('max_total_tokens'),
    max_input_tokens: left('max_input_tokens'),
    max_output_tokens: left('max_output_tokens'),
    max_llm_calls: left('max_llm_calls'),
    max_cost_usd: left('max_cost_usd'),
    max_wall_seconds: left('max_wall_seconds'),
    on_exhausted: 'stop',
  };
}

/**
 * What a run that ran out of budget says to a person: which bounds it reached, whether they were the
 * defaults, and where to raise them.
 */
export function exhaustedSummary(report: BudgetReport | undefined): string {
  if (!report) return 'budget exhausted';
  const reached = report.exceeded.map((name) => {
    const limit = report.limit[name];
    const byDefault = limit === DEFAULT_BUDGET_LIMITS[name as keyof typeof DEFAULT_BUDGET_LIMITS];
    return `${name} (${report.spent[name] ?? 0} of ${limit}${byDefault ? ', the default bound' : ''})`;
  });
  return (
    `budget exhausted: ${reached.join(', ')} reached; spent ${JSON.stringify(report.spent)}. ` +
    'Raise a bound in the agent\'s "budget" or the run\'s input (null: none), see docs/budgets.md'
  );
}
