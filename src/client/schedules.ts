import {
  ScheduleNotFoundError,
  WorkflowFailedError,
  type Client,
  type ScheduleDescription as TemporalScheduleDescription,
  type ScheduleOptions,
  type ScheduleSpec,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import {
  ScheduleDefinition,
  ScheduledFireInput,
  scheduleIdOf,
  scheduleRemaining,
  type ScheduleDefinitionInput,
  type ScheduledFireInputWire,
  type ScheduledFireResult,
  type ScheduleSpending,
} from '../runtime';

/** A name that is no schedule of this task queue (deleted, or never created). */
export class UnknownScheduleError extends Error {
  override readonly name = 'UnknownScheduleError';
  constructor(
    readonly schedule: string,
    readonly scheduleId: string,
  ) {
    super(`no schedule named '${schedule}' (Temporal schedule id ${scheduleId})`);
  }
}

/** A schedule as `list` shows it. */
export interface ScheduleSummary {
  name: string;
  schedule_id: string;
  /** `agent A` or `session S`. */
  target: string;
  /** `every 30s`, `cron 0 9 * * *`, `at 2026-12-24T18:00:00Z`. */
  when: string;
  paused: boolean;
  /** Why it is paused (a person's reason, or the budget it spent). */
  note: string | null;
  next_fire: string | null;
}

/** A fire among the schedule's recent ones, and how it ended. */
export interface RecentFire {
  scheduled_at: string;
  fire_id: string;
  /** The fire's Temporal status: running, completed, failed, ... */
  status: string;
  /** Its result, once it completed. */
  outcome: ScheduledFireResult | null;
}

/** A schedule as `describe` shows it. */
export interface ScheduleDescription extends ScheduleSummary {
  definition: ScheduleDefinition;
  source: string | null;
  next_fires: string[];
  /** Fires started so far. */
  fires: number;
  /** Fires skipped because the last one still ran (overlap `skip`). */
  skipped_overlap: number;
  /** Fires skipped because the server could not start them within the catch-up window. */
  missed_catchup_window: number;
  /** Fires running now (their workflow ids). */
  running: string[];
  recent_fires: RecentFire[];
  /** What its runs spent, summed over its fires, and what is left of its budget. */
  spent: ScheduleSpending;
  remaining: { max_total_tokens: number | null; max_llm_calls: number | null } | null;
}

/** What `apply` did with each schedule of an agents file (and, with `prune`, with those the file no longer has). */
export interface AppliedSchedule {
  name: string;
  action: 'created' | 'updated' | 'unchanged' | 'deleted';
}

/** Where a schedule came from (its memo): `create` or an agents file `apply` manages (and may prune). */
type ScheduleSource = 'create' | 'agents-file';

/** The most schedules `list` and `apply --prune` look through in the namespace. */
const SCHEDULES_SCANNED = 1000;

/**
 * Schedules on Temporal Schedules (`client.schedules`): each fire starts workflow `scheduledFire` on the
 * client's task queue, which runs an agent or messages a session. Their ids are `<task queue>:<name>`:
 * projects that share a namespace each see their own.
 */
export class PatchloopSchedules {
  constructor(
    private readonly temporal: Client,
    private readonly taskQueue: string,
  ) {}

  /** The Temporal schedule id of a name. */
  idOf(name: string): string {
    return scheduleIdOf(this.taskQueue, name);
  }

  /** Creates a schedule; an `at` time must be in the future. Fails when the name is taken. */
  async create(input: ScheduleDefinitionInput, source: ScheduleSource = 'create'): Promise<ScheduleDescription> {
    const definition = ScheduleDefinition.parse(input);
    if (definition.at !== undefined && Date.parse(definition.at) <= Date.now())
      throw new TypeError(`--at ${definition.at} is in the past`);
    const scheduleId = this.idOf(definition.name);
    await this.temporal.schedule.create({
      scheduleId,
      ...this.optionsOf(scheduleId, { schedule_id: scheduleId, definition }),
      memo: { patchloop_source: source },
    } as ScheduleOptions);
    return this.describe(definition.name);
  }

  /** The schedules of this task queue, by name. */
  async list(): Promise<ScheduleSummary[]> {
    const prefix = this.idOf('');
    const names: string[] = [];
    let scanned = 0;
    for await (const schedule of this.temporal.schedule.list({ pageSize: 100 })) {
      if (schedule.scheduleId.startsWith(prefix)) names.push(schedule.scheduleId.slice(prefix.length));
      if ((scanned += 1) >= SCHEDULES_SCANNED) break;
    }
    const described = await Promise.all(
      names.sort().map((name) => this.describe(name, false).catch((error: unknown) => missing(error))),
    );
    return described.flatMap((schedule) => (schedule ? [summaryOf(schedule)] : []));
  }

  /** The schedule: its definition, next fires, counts of fires taken and skipped, recent fires and how they ended. */
  async describe(name: string, withRecent = true): Promise<ScheduleDescription> {
    const description = await this.described(name);
    const fire = ScheduledFireInput.parse(description.action.args?.[0]);
    const { info, state } = description;
    const summary = summaryOf({
      name,
      schedule_id: description.scheduleId,
      definition: fire.definition,
      paused: state.paused,
      note: state.note ?? null,
      next_fires: info.nextActionTimes.map((time) => time.toISOString()),
    });
    return {
      ...summary,
      definition: fire.definition,
      source: typeof description.memo?.['patchloop_source'] === 'string' ? description.memo['patchloop_source'] : null,
      next_fires: info.nextActionTimes.slice(0, 5).map((time) => time.toISOString()),
      fires: info.numActionsTaken,
      skipped_overlap: info.numActionsSkippedOverlap,
      missed_catchup_window: info.numActionsMissedCatchupWindow,
      running: info.runningActions.map((action) => action.workflow.workflowId),
      recent_fires: withRecent ? await this.recentFires(description) : [],
      spent: fire.spent,
      remaining: fire.definition.budget ? scheduleRemaining(fire.definition.budget, fire.spent) : null,
    };
  }

  /** Stops the schedule's fires until `unpause` (runs going on go on). */
  async pause(name: string, note = 'paused by patchloop schedule pause'): Promise<void> {
    await this.handle(name, (handle) => handle.pause(note));
  }

  async unpause(name: string, note = 'unpaused by patchloop schedule unpause'): Promise<void> {
    await this.handle(name, (handle) => handle.unpause(note));
  }

  /** Fires now, under the schedule's overlap policy (a fire still running: `skip` skips this one too). */
  async trigger(name: string): Promise<void> {
    const { policies } = await this.described(name);
    await this.handle(name, (handle) => handle.trigger(policies.overlap));
  }

  /** Deletes the schedule; its runs going on go on, and keep its id in `PatchloopSchedule`. */
  async delete(name: string): Promise<void> {
    await this.handle(name, (handle) => handle.delete());
  }

  /**
   * Makes the schedules of an agents file so: creates those missing, updates those that changed (their
   * running total and paused state kept), leaves the rest; with `prune`, deletes the schedules an agents
   * file made on this task queue that the file no longer declares.
   */
  async apply(inputs: ScheduleDefinitionInput[], options: { prune?: boolean } = {}): Promise<AppliedSchedule[]> {
    const definitions = inputs.map((input) => ScheduleDefinition.parse(input));
    const names = definitions.map((definition) => definition.name);
    const twice = names.find((name, index) => names.indexOf(name) !== index);
    if (twice !== undefined) throw new TypeError(`schedule '${twice}' is declared twice`);
    const applied: AppliedSchedule[] = [];
    for (const definition of definitions) applied.push({ name: definition.name, action: await this.put(definition) });
    if (options.prune)
      for (const schedule of await this.list()) {
        if (names.includes(schedule.name)) continue;
        const { source } = await this.describe(schedule.name, false);
        if (source !== 'agents-file') continue;
        await this.delete(schedule.name);
        applied.push({ name: schedule.name, action: 'deleted' });
      }
    return applied;
  }

  private async put(definition: ScheduleDefinition): Promise<AppliedSchedule['action']> {
    const scheduleId = this.idOf(definition.name);
    let current: TemporalScheduleDescription;
    try {
      current = await this.described(definition.name);
    } catch (error) {
      missing(error);
      await this.create(definition, 'agents-file');
      return 'created';
    }
    const fire = ScheduledFireInput.parse(current.action.args?.[0]);
    if (stableJson(fire.definition) === stableJson(definition)) return 'unchanged';
    await this.temporal.schedule.getHandle(scheduleId).update((previous) => {
      const now = ScheduledFireInput.parse(previous.action.args?.[0]);
      const options = this.optionsOf(scheduleId, { ...now, definition });
      return {
        ...options,
        state: {
          paused: previous.state.paused,
          ...(previous.state.note !== undefined ? { note: previous.state.note } : {}),
          ...options.state,
        },
      } as ScheduleUpdateOptions;
    });
    return 'updated';
  }

  /** The schedule's spec, action, policies and state, from its definition. */
  private optionsOf(scheduleId: string, fire: ScheduledFireInputWire) {
    const definition = ScheduleDefinition.parse(fire.definition);
    return {
      spec: specOf(definition),
      action: {
        type: 'startWorkflow' as const,
        workflowType: 'scheduledFire',
        workflowId: scheduleId,
        taskQueue: this.taskQueue,
        args: [fire],
        staticSummary: `schedule ${definition.name}: ${targetOf(definition)}`,
      },
      policies: {
        overlap: definition.overlap.toUpperCase() as 'SKIP',
        catchupWindow: definition.catchup_window,
      },
      state: definition.at !== undefined ? { remainingActions: 1 } : {},
    };
  }

  /** The ten newest fires, each with how it ended (a completed fire's result, read from its close event). */
  private async recentFires(description: TemporalScheduleDescription): Promise<RecentFire[]> {
    return Promise.all(
      description.info.recentActions.map(async (action) => {
        const fireId = action.action.workflow.workflowId;
        const handle = this.temporal.workflow.getHandle(fireId, action.action.workflow.firstExecutionRunId);
        const status = (await handle.describe()).status.name.toLowerCase();
        let outcome: ScheduledFireResult | null = null;
        if (status === 'completed') outcome = (await handle.result()) as ScheduledFireResult;
        if (status === 'failed')
          outcome = await handle.result().then(
            () => null,
            (error: unknown) =>
              error instanceof WorkflowFailedError
                ? {
                    outcome: 'failed' as const,
                    error: { type: 'FireFailed', message: error.cause?.message ?? error.message },
                  }
                : null,
          );
        return { scheduled_at: action.scheduledAt.toISOString(), fire_id: fireId, status, outcome };
      }),
    );
  }

  private async described(name: string): Promise<TemporalScheduleDescription> {
    return this.handle(name, (handle) => handle.describe());
  }

  /** A call on the schedule's handle; a schedule that is not there is an `UnknownScheduleError`. */
  private async handle<T>(
    name: string,
    call: (handle: ReturnType<Client['schedule']['getHandle']>) => Promise<T>,
  ): Promise<T> {
    try {
      return await call(this.temporal.schedule.getHandle(this.idOf(name)));
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) throw new UnknownScheduleError(name, this.idOf(name));
      throw error;
    }
  }
}

/** An unknown schedule is no error where its absence is expected (a list racing a delete, apply's create). */
function missing(error: unknown): undefined {
  if (error instanceof UnknownScheduleError || error instanceof ScheduleNotFoundError) return undefined;
  throw error;
}

function summaryOf(schedule: {
  name: string;
  schedule_id: string;
  definition: ScheduleDefinition;
  paused: boolean;
  note: string | null;
  next_fires: string[];
}): ScheduleSummary {
  const { definition } = schedule;
  return {
    name: schedule.name,
    schedule_id: schedule.schedule_id,
    target: targetOf(definition),
    when:
      definition.cron !== undefined
        ? `cron ${definition.cron}${definition.timezone ? ` (${definition.timezone})` : ''}`
        : definition.every !== undefined
          ? `every ${definition.every}`
          : `at ${definition.at}`,
    paused: schedule.paused,
    note: schedule.paused ? schedule.note : null,
    next_fire: schedule.paused ? null : (schedule.next_fires[0] ?? null),
  };
}

function targetOf(definition: ScheduleDefinition): string {
  return definition.session !== undefined ? `session ${definition.session}` : `agent ${definition.agent}`;
}

const MONTHS = [
  'JANUARY',
  'FEBRUARY',
  'MARCH',
  'APRIL',
  'MAY',
  'JUNE',
  'JULY',
  'AUGUST',
  'SEPTEMBER',
  'OCTOBER',
  'NOVEMBER',
  'DECEMBER',
] as const;

/** When a schedule fires, as Temporal's spec: a cron string, an interval, or the one instant of `at` (UTC). */
function specOf(definition: ScheduleDefinition): ScheduleSpec {
  const jitter = definition.jitter === '0s' ? {} : { jitter: definition.jitter };
  if (definition.cron !== undefined)
    return {
      cronExpressions: [definition.cron],
      ...(definition.timezone ? { timezone: definition.timezone } : {}),
      ...jitter,
    };
  if (definition.every !== undefined) return { intervals: [{ every: definition.every }], ...jitter };
  const at = new Date(definition.at!);
  return {
    calendars: [
      {
        year: at.getUTCFullYear(),
        month: MONTHS[at.getUTCMonth()]!,
        dayOfMonth: at.getUTCDate(),
        hour: at.getUTCHours(),
        minute: at.getUTCMinutes(),
        second: at.getUTCSeconds(),
      },
    ],
    timezone: 'UTC',
    ...jitter,
  };
}

/** JSON with keys in order, so two equal definitions compare equal however they were written. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a.localeCompare(b)))
      : inner,
  );
}
