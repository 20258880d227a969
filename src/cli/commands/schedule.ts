import { ScheduleAlreadyRunning } from '@temporalio/client';
import { z } from 'zod';
import type { PatchloopClient } from '../../client/patchloop-client';
import { UnknownScheduleError, type RecentFire, type ScheduleDescription } from '../../client/schedules';
import { CliErrorType } from '../../common/cli-error-types';
import { notifyOptions } from '../notify-options';
import { printTable } from '../table';
import { ScheduleDefinition } from '../../runtime';
import { parseCommand } from '../arguments';
import { schedulesFromFile } from '../agents-file';
import { CliError, UsageError } from '../errors';
import { SCHEDULE_SYNTAX } from '../syntax';

type Print = (line: string) => void;
type Values = ReturnType<typeof parseCommand<typeof SCHEDULE_SYNTAX.options>>['values'];

const ACTIONS = ['create', 'list', 'describe', 'pause', 'unpause', 'trigger', 'delete', 'apply'];

/** `patchloop schedule <action> ...`: the schedules of the configured task queue (`client.schedules`). */
export async function scheduleCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommand(args, SCHEDULE_SYNTAX);
  const action = positionals['action']!;
  if (!ACTIONS.includes(action)) throw usage(`unknown schedule action '${action}': one of ${ACTIONS.join(', ')}`);
  const name = positionals['name'];
  if ((action === 'list' || action === 'apply') && name !== undefined) throw usage(`unexpected argument '${name}'`);
  if (action !== 'list' && action !== 'apply' && name === undefined) throw usage('missing name');
  try {
    if (action === 'create') return await create(client, name!, values, print);
    if (action === 'list') return await list(client, values, print);
    if (action === 'apply') return await apply(client, values, print);
    if (action === 'describe') {
      const described = await client.schedules.describe(name!);
      if (values.json) return described;
      for (const line of describeLines(described)) print(line);
      return undefined;
    }
    if (action === 'pause') await client.schedules.pause(name!, values.reason);
    if (action === 'unpause') await client.schedules.unpause(name!);
    if (action === 'trigger') await client.schedules.trigger(name!);
    if (action === 'delete') await client.schedules.delete(name!);
    const done = { pause: 'paused', unpause: 'unpaused', trigger: 'triggered', delete: 'deleted' }[action]!;
    if (values.json) return { name, schedule_id: client.schedules.idOf(name!), action: done };
    print(`${done} schedule ${name}`);
    return undefined;
  } catch (error) {
    throw explained(error);
  }
}

function usage(problem: string): UsageError {
  return new UsageError(`${problem}\nusage: ${SCHEDULE_SYNTAX.usage}`);
}

/** The client's errors as the CLI reports them: an unknown name is NotFound, a bad spec the server refused is InvalidInput. */
function explained(error: unknown): unknown {
  if (error instanceof UnknownScheduleError) return new CliError(error.message, CliErrorType.NotFound);
  if (error instanceof ScheduleAlreadyRunning)
    return new CliError(
      `a schedule with id ${error.scheduleId} exists already (delete it first, or use schedule apply)`,
      CliErrorType.AlreadyExists,
    );
  if (error instanceof TypeError) return new CliError(error.message, CliErrorType.InvalidInput);
  return error;
}

async function create(client: PatchloopClient, name: string, values: Values, print: Print): Promise<unknown> {
  const number = (option: 'budget-tokens' | 'budget-calls') => {
    const text = values[option];
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw usage(`--${option} must be a whole number >= 1, not '${text}'`);
    return value;
  };
  const tokens = number('budget-tokens');
  const calls = number('budget-calls');
  const notify = notifyOptions(values['notify-url'], values['notify-secret-env'], SCHEDULE_SYNTAX.usage);
  const parsed = ScheduleDefinition.safeParse({
    name,
    agent: values.agent,
    input: values.input,
    cron: values.cron,
    every: values.every,
    at: values.at,
    timezone: values.timezone,
    overlap: values.overlap,
    catchup_window: values['catchup-window'],
    jitter: values.jitter,
    session: values.session,
    ...(notify ? { notify } : {}),
    ...(tokens !== undefined || calls !== undefined
      ? { budget: { max_total_tokens: tokens, max_llm_calls: calls } }
      : {}),
  });
  if (!parsed.success) throw usage(z.prettifyError(parsed.error));
  const described = await client.schedules.create(parsed.data);
  if (values.json) return described;
  print(
    `created schedule ${described.name} (${described.schedule_id}): ${described.target}, ${described.when}; next fire ${described.next_fire ?? 'none'}`,
  );
  return undefined;
}

async function list(client: PatchloopClient, values: Values, print: Print): Promise<unknown> {
  const schedules = await client.schedules.list();
  if (values.json) return schedules;
  if (schedules.length === 0) {
    print('no schedules');
    return undefined;
  }
  const rows = [
    ['NAME', 'TARGET', 'WHEN', 'NEXT FIRE', 'STATE'],
    ...schedules.map((schedule) => [
      schedule.name,
      schedule.target,
      schedule.when,
      schedule.next_fire ?? '-',
      schedule.paused ? `paused: ${schedule.note ?? ''}` : 'active',
    ]),
  ];
  printTable(rows, print);
  return undefined;
}

async function apply(client: PatchloopClient, values: Values, print: Print): Promise<unknown> {
  if (!values.agents) throw usage('apply needs --agents FILE');
  const applied = await client.schedules.apply(await schedulesFromFile(values.agents), {
    prune: values.prune === true,
  });
  if (values.json) return applied;
  if (applied.length === 0) print(`no schedules in ${values.agents}`);
  for (const schedule of applied) print(`${schedule.action} ${schedule.name}`);
  return undefined;
}

/** `describe` as text: what it runs and when, its state, counts, budget and recent fires. */
function describeLines(schedule: ScheduleDescription): string[] {
  const { definition } = schedule;
  const budget = definition.budget;
  const spentLine = budget
    ? [
        `budget: ${[
          ...(budget.max_total_tokens !== undefined
            ? [`${schedule.spent.total_tokens} of ${budget.max_total_tokens} tokens`]
            : []),
          ...(budget.max_llm_calls !== undefined
            ? [`${schedule.spent.llm_calls} of ${budget.max_llm_calls} model calls`]
            : []),
        ].join(', ')} spent`,
      ]
    : [];
  return [
    `schedule ${schedule.name} (${schedule.schedule_id}): ${schedule.target}, ${schedule.when}, overlap ${definition.overlap}`,
    `input: ${definition.input}`,
    `state: ${schedule.paused ? `paused: ${schedule.note ?? ''}` : 'active'}`,
    `next fires: ${schedule.paused || schedule.next_fires.length === 0 ? '-' : schedule.next_fires.join(', ')}`,
    `fires: ${schedule.fires} started, ${schedule.skipped_overlap} skipped (overlap), ${schedule.missed_catchup_window} missed (catch-up window)`,
    ...spentLine,
    ...(schedule.running.length > 0 ? [`running: ${schedule.running.join(', ')}`] : []),
    ...(schedule.recent_fires.length > 0
      ? ['recent fires:', ...schedule.recent_fires.map((fire) => `  ${recentFireLine(fire)}`)]
      : ['recent fires: none']),
  ];
}

function recentFireLine(fire: RecentFire): string {
  const outcome = fire.outcome;
  const how = !outcome
    ? fire.status
    : outcome.outcome === 'schedule_budget_exhausted'
      ? `no run: ${outcome.note ?? 'schedule budget exhausted'}`
      : [
          outcome.outcome,
          outcome.workflow_id ? `${outcome.workflow_id}` : '',
          outcome.error ? `${outcome.error.type}: ${outcome.error.message}` : '',
          outcome.answer ? `"${outcome.answer}"` : '',
        ]
          .filter((part) => part !== '')
          .join('  ');
  return `${fire.scheduled_at}  ${fire.fire_id}  ${how}`;
}
