import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import type { BudgetOverride, BudgetSettings } from './budget';
import type { AgentRunResult, RunSpending } from './run-input';
import { NotifySettings } from './notify';

/** A duration as Temporal's schedules take it: a whole number and a unit (`30s`, `5m`, `2h`, `1d`, `500ms`). */
const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Milliseconds of a duration (`30s`), or undefined when it is not one. */
function durationMs(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : undefined;
}

const duration = (what: string) =>
  z
    .string()
    .refine((text) => durationMs(text) !== undefined, `${what}: a whole number and a unit: 500ms, 30s, 5m, 2h, 1d`);

/** What a schedule may spend over all its fires (runs of an agent): at least one limit. */
export const ScheduleBudget = sharedSchema('runtime/schedule#ScheduleBudget', () =>
  z
    .strictObject({
      max_total_tokens: z.number().int().positive().optional().describe('Input and output tokens of all its runs.'),
      max_llm_calls: z.number().int().positive().optional().describe('Model calls of all its runs.'),
    })
    .refine(
      (budget) => budget.max_total_tokens !== undefined || budget.max_llm_calls !== undefined,
      'a schedule budget names max_total_tokens, max_llm_calls or both',
    ),
);
export type ScheduleBudget = z.infer<typeof ScheduleBudget>;

/** What overlapping fires do (Temporal's overlap policies). */
const SCHEDULE_OVERLAPS = ['skip', 'buffer_one', 'allow_all', 'cancel_other'] as const;

/**
 * A schedule: when it fires (exactly one of `cron`, `every`, `at`) and what a fire does (a run of
 * `agent` with `input`, or `input` as a user message to the long-lived session `session`). The
 * `schedules` of an agents file, `patchloop schedule create` and `client.schedules.create` take it.
 */
export const ScheduleDefinition = sharedSchema('runtime/schedule#ScheduleDefinition', () =>
  z
    .strictObject({
      name: z
        .string()
        .regex(/^[\w.-]{1,100}$/, 'a schedule name is 1 to 100 letters, digits, _ . -')
        .describe("The schedule's name; its Temporal schedule id is '<task queue>:<name>'."),
      agent: z.string().min(1).optional().describe('The agent each fire runs (required unless `session` is set).'),
      input: z.string().min(1).describe("The run's input, or the message sent to `session`."),
      cron: z
        .string()
        .min(1)
        .optional()
        .describe('A cron expression (5 fields, or 6 with seconds first, or @daily ...).'),
      every: duration('every')
        .refine((text) => (durationMs(text) ?? 1000) >= 1000, 'every: at least 1s')
        .optional()
        .describe('An interval: 30s, 5m, 2h, 1d.'),
      at: z.iso
        .datetime({ offset: true })
        .optional()
        .describe('One fire at this ISO time (2026-12-24T18:00:00Z); the schedule then stays, with no fire left.'),
      timezone: z.string().min(1).optional().describe('The time zone of `cron` (IANA name; UTC by default).'),
      overlap: z
        .enum(SCHEDULE_OVERLAPS)
        .default('skip')
        .describe(
          'A fire while the last one still runs: skip it (counted), buffer_one (run it after), allow_all, or cancel_other (abort the running one).',
        ),
      catchup_window: duration('catchup_window')
        .default('5m')
        .describe(
          'A fire the server could not start in time (an outage) still starts within this; later, it is skipped.',
        ),
      jitter: duration('jitter').default('0s').describe('Each fire is delayed by a random time up to this.'),
      session: z
        .string()
        .min(1)
        .optional()
        .describe('A chatSession id: each fire sends `input` to it as a user message and waits for the reply.'),
      budget: ScheduleBudget.optional().describe(
        'What all the runs of the schedule may spend together; once spent, the schedule pauses itself and says why.',
      ),
      notify: NotifySettings.optional().describe(
        "A call when each fire's run ends (docs/notifications.md): its agent's notify otherwise.",
      ),
    })
    .superRefine((schedule, context) => {
      const when = [schedule.cron, schedule.every, schedule.at].filter((value) => value !== undefined);
      if (when.length !== 1)
        context.addIssue({ code: 'custom', message: 'a schedule has exactly one of cron, every, at' });
      if (schedule.agent === undefined && schedule.session === undefined)
        context.addIssue({ code: 'custom', message: 'a schedule names an agent (or a session to message)' });
      if (schedule.session !== undefined && schedule.budget !== undefined)
        context.addIssue({
          code: 'custom',
          message: "a schedule that messages a session has no budget of its own: the session's budget bounds it",
        });
    }),
);
export type ScheduleDefinition = z.infer<typeof ScheduleDefinition>;
export type ScheduleDefinitionInput = z.input<typeof ScheduleDefinition>;

/** What a schedule's runs spent, summed over its fires. */
export const ScheduleSpending = sharedSchema('runtime/schedule#ScheduleSpending', () =>
  z.strictObject({
    total_tokens: z.number().int().nonnegative(),
    llm_calls: z.number().int().nonnegative(),
  }),
);
export type ScheduleSpending = z.infer<typeof ScheduleSpending>;

/** How many fire ids a schedule remembers as charged: a charge retried after it applied applies once. */
export const CHARGED_FIRES_KEPT = 20;

/**
 * Input of workflow `scheduledFire`: the schedule's action carries it, and its running total (`spent`,
 * with the fires already `charged`) is updated in place after each fire.
 */
export const ScheduledFireInput = sharedSchema('runtime/schedule#ScheduledFireInput', () =>
  z.strictObject({
    schedule_id: z.string().min(1),
    definition: ScheduleDefinition,
    spent: ScheduleSpending.default({ total_tokens: 0, llm_calls: 0 }),
    charged: z.array(z.string()).max(CHARGED_FIRES_KEPT).default([]),
  }),
);
export type ScheduledFireInput = z.infer<typeof ScheduledFireInput>;
export type ScheduledFireInputWire = z.input<typeof ScheduledFireInput>;

/**
 * How a fire ended (the result of workflow `scheduledFire`): its run's status or the session turn's, or
 * no run at all because the schedule's budget was spent. A failed run is reported here, not by failing
 * the fire: the run shows as failed itself.
 */
export interface ScheduledFireResult {
  outcome: 'completed' | 'aborted' | 'budget_exhausted' | 'failed' | 'schedule_budget_exhausted';
  /** The run it started, or the session it messaged (workflow ids). */
  workflow_id?: string;
  /** The run's answer or the session's reply, cut to 200 characters. */
  answer?: string | null;
  error?: { type: string; message: string };
  /** What the run spent (a run of an agent). */
  spent?: ScheduleSpending;
  /** Why no run started. */
  note?: string;
}

/** The start of an answer, for a fire's result (`describe` shows it). */
export function answerPreview(answer: string | null | undefined): string | null {
  if (answer === null || answer === undefined) return null;
  const flat = answer.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
}

/** The Temporal schedule id of a schedule: namespaced by the task queue, so projects sharing a namespace never collide. */
export function scheduleIdOf(taskQueue: string, name: string): string {
  return `${taskQueue}:${name}`;
}

/** What is left of a schedule's budget (null: that limit is not set). */
export function scheduleRemaining(
  budget: ScheduleBudget,
  spent: ScheduleSpending,
): { max_total_tokens: number | null; max_llm_calls: number | null } {
  return {
    max_total_tokens: budget.max_total_tokens === undefined ? null : budget.max_total_tokens - spent.total_tokens,
    max_llm_calls: budget.max_llm_calls === undefined ? null : budget.max_llm_calls - spent.llm_calls,
  };
}

/** Why a schedule may not fire again: the limits it has spent, in words; undefined while something is left. */
export function scheduleExhausted(budget: ScheduleBudget, spent: ScheduleSpending): string | undefined {
  const remaining = scheduleRemaining(budget, spent);
  const over = [
    ...(remaining.max_total_tokens !== null && remaining.max_total_tokens <= 0
      ? [`${spent.total_tokens} of ${budget.max_total_tokens} tokens`]
      : []),
    ...(remaining.max_llm_calls !== null && remaining.max_llm_calls <= 0
      ? [`${spent.llm_calls} of ${budget.max_llm_calls} model calls`]
      : []),
  ];
  return over.length > 0 ? `schedule budget exhausted: its runs spent ${over.join(' and ')}` : undefined;
}

/**
 * The budget of a fire's run: what the schedule has left, or the agent's own limit when that is lower
 * (a run's override replaces its agent's limits, so the smaller of the two is named here).
 */
export function fireRunBudget(
  budget: ScheduleBudget,
  spent: ScheduleSpending,
  agent: Pick<BudgetSettings, 'max_total_tokens' | 'max_llm_calls'> | undefined,
): BudgetOverride {
  const remaining = scheduleRemaining(budget, spent);
  const lower = (left: number | null, own: number | null | undefined) =>
    left === null ? undefined : own === null || own === undefined ? left : Math.min(left, own);
  const tokens = lower(remaining.max_total_tokens, agent?.max_total_tokens);
  const calls = lower(remaining.max_llm_calls, agent?.max_llm_calls);
  return {
    ...(tokens !== undefined ? { max_total_tokens: tokens } : {}),
    ...(calls !== undefined ? { max_llm_calls: calls } : {}),
  };
}

/** What a fire's run spent: from its result, or from the `spent` details of its failure. */
export function runSpending(ended: { result: AgentRunResult } | { failed: RunSpending | undefined }): ScheduleSpending {
  if ('result' in ended)
    return {
      total_tokens: ended.result.usage?.total_tokens ?? 0,
      llm_calls: ended.result.budget?.spent['max_llm_calls'] ?? 0,
    };
  return { total_tokens: ended.failed?.usage?.total_tokens ?? 0, llm_calls: ended.failed?.llm_calls ?? 0 };
}

/** The fire's input with its run's spending added, once per fire id. */
export function charged(fire: ScheduledFireInput, fireId: string, spending: ScheduleSpending): ScheduledFireInput {
  if (fire.charged.includes(fireId)) return fire;
  return {
    ...fire,
    spent: {
      total_tokens: fire.spent.total_tokens + spending.total_tokens,
      llm_calls: fire.spent.llm_calls + spending.llm_calls,
    },
    charged: [...fire.charged, fireId].slice(-CHARGED_FIRES_KEPT),
  };
}
