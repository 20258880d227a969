import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { encodeToPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { AgentRegistry } from '../agents/registry';
import {
  charged,
  fireRunBudget,
  ScheduledFireInput,
  scheduleExhausted,
  type BudgetOverride,
  type ScheduleSpending,
} from '../runtime';

export interface ScheduleStandingInput {
  schedule_id: string;
  /** The fire's own input: what counts when the schedule is gone (deleted after it fired). */
  fire: ScheduledFireInput;
}

/** What a fire may do: nothing (the schedule's budget is spent, and it paused itself), or a run with this budget. */
export interface ScheduleStanding {
  exhausted?: string;
  run_budget?: BudgetOverride;
  /** Whether the namespace has patchloop's search attributes (the run then carries `PatchloopSchedule`). */
  search_attributes: boolean;
}

/**
 * Before a fire starts its run: what the schedule has spent over its fires (the running total its action
 * carries), and so the run's budget; a schedule with nothing left pauses itself with a note saying so.
 */
export function createScheduleStanding(registry: AgentRegistry, searchAttributes: () => Promise<boolean>) {
  return async function scheduleStanding(input: ScheduleStandingInput): Promise<ScheduleStanding> {
    const found = await searchAttributes().catch(() => false);
    const budget = input.fire.definition.budget;
    if (!budget) return { search_attributes: found };
    const client = Context.current().client;
    const fire = (await currentFire(client, input.schedule_id)) ?? input.fire;
    const exhausted = scheduleExhausted(budget, fire.spent);
    if (exhausted !== undefined) {
      await client.schedule
        .getHandle(input.schedule_id)
        .pause(exhausted)
        .catch((error: unknown) => ignoreMissing(error));
      return { exhausted, search_attributes: found };
    }
    const agent = registry.definitions.find((definition) => definition.name === fire.definition.agent)?.budget;
    return { run_budget: fireRunBudget(budget, fire.spent, agent), search_attributes: found };
  };
}

export interface ChargeScheduleInput {
  schedule_id: string;
  fire_id: string;
  spending: ScheduleSpending;
}

/**
 * Adds what a fire's run spent to its schedule's running total (in the schedule's action, so it lasts as
 * long as the schedule), once per fire id; when the budget is then spent, the same update pauses the
 * schedule with a note saying why. Updates carry the schedule's conflict token: the server drops one
 * made from a stale read (another fire charged meanwhile), and the charge is read back until it holds.
 */
export async function chargeSchedule(input: ChargeScheduleInput): Promise<{ spent: ScheduleSpending } | null> {
  const context = Context.current();
  const handle = context.client.schedule.getHandle(input.schedule_id);
  for (let attempt = 1; attempt <= CHARGE_ATTEMPTS; attempt += 1) {
    let described;
    try {
      described = await handle.describe();
    } catch (error) {
      ignoreMissing(error);
      return null;
    }
    const fire = ScheduledFireInput.parse(described.action.args?.[0]);
    if (fire.charged.includes(input.fire_id)) return { spent: fire.spent };
    const next = charged(fire, input.fire_id, input.spending);
    const note = next.definition.budget ? scheduleExhausted(next.definition.budget, next.spent) : undefined;
    await updateAction(context.client, described.raw, next, note);
    await context.sleep(Math.min(100 * attempt, 1000));
  }
  throw new Error(
    `the charge of ${input.fire_id} did not reach schedule ${input.schedule_id} in ${CHARGE_ATTEMPTS} tries`,
  );
}

/** At most this many reads and updates per charge (each waits a little longer for the last to apply). */
const CHARGE_ATTEMPTS = 30;

type RawDescription = Awaited<ReturnType<ReturnType<Client['schedule']['getHandle']>['describe']>>['raw'];

/** Replaces the schedule's fire input (and pauses it, with `note`), if nothing changed it since `raw` was read. */
async function updateAction(client: Client, raw: RawDescription, fire: ScheduledFireInput, note?: string) {
  const schedule = raw.schedule!;
  const startWorkflow = schedule.action!.startWorkflow!;
  await client.workflowService.updateSchedule({
    namespace: client.options.namespace,
    scheduleId: fire.schedule_id,
    conflictToken: raw.conflictToken,
    identity: client.options.identity,
    requestId: randomUUID(),
    schedule: {
      ...schedule,
      action: {
        startWorkflow: {
          ...startWorkflow,
          input: { payloads: await encodeToPayloads(client.options.loadedDataConverter, fire) },
        },
      },
      state: note ? { ...schedule.state, paused: true, notes: note } : schedule.state,
    },
  });
}

/** The schedule's current fire input (its running total), or undefined when the schedule is gone. */
async function currentFire(client: Client, scheduleId: string): Promise<ScheduledFireInput | undefined> {
  try {
    return ScheduledFireInput.parse((await client.schedule.getHandle(scheduleId).describe()).action.args?.[0]);
  } catch (error) {
    ignoreMissing(error);
    return undefined;
  }
}

/** A schedule deleted while its fire ran: nothing to read or charge. Anything else is an error. */
function ignoreMissing(error: unknown): void {
  if (!(error instanceof ScheduleNotFoundError)) throw error;
}
