import { configFromEnvironment, workflowUiUrl } from '../../config/environment';
import { notifyOptions } from '../notify-options';
import { randomUUID } from 'node:crypto';
import type { Message } from '../../context';
import {
  exhaustedSummary,
  forkPoint,
  type AgentRunResult,
  type BudgetOverride,
  type RunEvent,
  type RunStatus,
} from '../../runtime';
import { askApproval, terminalAsker } from './approvals';
import { parseCommand } from '../arguments';
import { failedTurnText, followRun, guardrailVerdictLine, jsonOutput, textOutput } from '../../client/follow';
import { actionsLine } from '../../client/billable-actions';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import {
  forkMemoOf,
  type ForkMemo,
  recordedTranscript,
  retryingPhases,
  runSummaryOf,
  type ForkSummary,
  type NotificationState,
  type PatchloopClient,
  type RunHandle,
} from '../../client/patchloop-client';
import { askingWorker, WORKER_ANSWER_MS } from '../../client/worker-wait';
import { EXIT, UsageError, WithStatus } from '../errors';
import { detach, detachOnInterrupt } from '../interrupt';
import { agentResolved, explainUnavailable, failureOf } from '../preflight';
import { appliedByWorker, closeWatch, note, unservedLine, waitingLine, watchForWorker } from '../worker-watch';
import { RUN_SYNTAX, FOLLOW_SYNTAX, ABORT_SYNTAX, POST_SYNTAX, SEND_SYNTAX, SHOW_SYNTAX } from '../syntax';

type Print = (line: string) => void;

const write = (text: string) => void process.stdout.write(text);

export async function runCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommand(args, RUN_SYNTAX);
  const agent = positionals['agent']!;
  const text = positionals['text']!;
  const maxToolCalls = values['max-tool-calls'] === undefined ? undefined : Number(values['max-tool-calls']);
  if (maxToolCalls !== undefined && !(Number.isInteger(maxToolCalls) && maxToolCalls >= 0))
    throw new UsageError(`--max-tool-calls must be a whole number >= 0\nusage: ${RUN_SYNTAX.usage}`);
  const budget = budgetOptions(values['max-calls'], values['max-tokens']);
  const notify = notifyOptions(values['notify-url'], values['notify-secret-env'], RUN_SYNTAX.usage);
  const run = await client.start(
    {
      agent,
      input: text,
      ...(maxToolCalls !== undefined ? { max_tool_calls: maxToolCalls } : {}),
      ...(budget ? { budget } : {}),
      ...(notify ? { notify } : {}),
    },
    { workflowId: values.id ?? `run-${randomUUID()}` },
  );
  const id = run.workflowId;
  // From here on the run exists: Ctrl-C leaves it running, and says so.
  const stopDetaching = detachOnInterrupt(run);
  // An unknown agent fails the command (with the names the worker serves), not just the run.
  const waiting = await agentResolved(run);
  stopDetaching();
  if (values.follow) return follow(run, client, Boolean(values.json), print);
  const output = { workflow_id: id, task_queue: client.taskQueue };
  if (waiting) {
    note(`started ${id}, but ${waitingLine(waiting, client.taskQueue).replace(/^waiting/, 'it is waiting')}`);
    note(`it runs once a worker takes it; follow it with: npx patchloop follow ${id}`);
    return new WithStatus({ ...output, waiting_for_worker: true }, EXIT.waitingForWorker);
  }
  note(`started ${id}: it goes on without this command; follow it with: npx patchloop follow ${id}`);
  return output;
}

/** `--max-calls` and `--max-tokens`: the run's own bounds on model calls and tokens (`none`: no bound). */
function budgetOptions(calls: string | undefined, tokens: string | undefined): BudgetOverride | undefined {
  const bound = (value: string | undefined, option: string) => {
    if (value === undefined) return undefined;
    if (value === 'none') return null;
    const number = Number(value);
    if (!(Number.isInteger(number) && number > 0))
      throw new UsageError(`${option} must be a whole number > 0, or none\nusage: ${RUN_SYNTAX.usage}`);
    return number;
  };
  const budget: BudgetOverride = {};
  const maxCalls = bound(calls, '--max-calls');
  const maxTokens = bound(tokens, '--max-tokens');
  if (maxCalls !== undefined) budget.max_llm_calls = maxCalls;
  if (maxTokens !== undefined) budget.max_total_tokens = maxTokens;
  return Object.keys(budget).length > 0 ? budget : undefined;
}

/** Follows a run that is already going (or finished): its events, then live tokens, then a summary. */
export async function followCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommand(args, FOLLOW_SYNTAX);
  const run = client.run(positionals['id']!);
  // An id that names no run says so, as every command on an id does (a run that has ended is followed to its outcome).
  await run.workflow.describe().catch((error: unknown) => explainUnavailable(run, error));
  return follow(run, client, Boolean(values.json), print);
}

/**
 * Prints the run's events and tokens until it ends; meanwhile says when it waits for a worker, and
 * Ctrl-C leaves it running with the commands to follow or abort it.
 */
async function follow(run: RunHandle, client: PatchloopClient, json: boolean, print: Print): Promise<undefined> {
  const stopDetaching = detachOnInterrupt(run);
  const watch = watchForWorker(run, client.taskQueue);
  // At a terminal, calls that wait for approval are put to the person following the run.
  const terminal = json ? undefined : terminalAsker(() => detach(run.workflowId));
  try {
    if (json) {
      await followRun(run, jsonOutput(write));
      return undefined;
    }
    print(`run ${run.workflowId}`);
    const onEvent = terminal ? (event: RunEvent) => askApproval(run, event, terminal.ask, print) : undefined;
    printOutcome(await followRun(run, textOutput(write), onEvent ? { onEvent } : {}), print);
  } finally {
    terminal?.close();
    closeWatch(watch);
    stopDetaching();
  }
  return undefined;
}

export function printOutcome(result: AgentRunResult, print: Print): void {
  if (result.status === 'completed') print(`answer: ${result.answer}`);
  else if (result.status === 'budget_exhausted') print(exhaustedSummary(result.budget));
  else
    print(
      `aborted${result.abort_reason ? ` (${result.abort_reason})` : ''}; the transcript ends with: ${JSON.stringify(result.transcript.at(-1)?.['content'])}`,
    );
  if (result.usage)
    print(
      `usage: ${result.usage.prompt_tokens} prompt + ${result.usage.completion_tokens} completion = ${result.usage.total_tokens} tokens${result.usage.estimated ? ' (estimated from characters: the server sent no usage for some calls)' : ''}`,
    );
}

export async function abortCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, ABORT_SYNTAX);
  const id = positionals['id']!;
  await client
    .run(id)
    .abort(values.reason ?? '')
    .catch((error: unknown) => explainUnavailable(client.run(id), error, 'there is nothing to abort'));
  return { workflow_id: id, signal: 'abort', reason: values.reason ?? '' };
}

/** Posts a message to a run or session without waiting (signal `user_message`). */
export async function postCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { positionals } = parseCommand(args, POST_SYNTAX);
  return postMessage(client.run(positionals['id']!), positionals['text']!);
}

async function postMessage(run: RunHandle, text: string): Promise<unknown> {
  await run.post(text).catch((error: unknown) => explainUnavailable(run, error, 'it takes no more messages'));
  return { workflow_id: run.workflowId, signal: 'user_message' };
}

/**
 * To a session: update `send`, printing the turn's reply; while no worker takes the session's task it
 * says so, and a failed turn exits 1. To a run, or with --no-wait (both deprecated: `post`), it posts.
 */
export async function sendCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, SEND_SYNTAX);
  const id = positionals['id']!;
  const text = positionals['text']!;
  const run = client.run(id);
  try {
    if ((await client.workflowType(id)) === 'chatSession' && !values['no-wait']) {
      const reply = await appliedByWorker(run, client.taskQueue, () => client.session(id).send(text));
      if (reply.status !== 'failed') return { workflow_id: id, ...reply };
      note(`the turn failed: ${failedTurnText(reply.error)}`);
      return new WithStatus({ workflow_id: id, ...reply }, EXIT.failed);
    }
  } catch (error) {
    return explainUnavailable(run, error, 'it takes no more messages');
  }
  return postMessage(run, text);
}

export async function showCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommand(args, SHOW_SYNTAX);
  const id = positionals['id']!;
  const run = client.run(id);
  const description = await run.workflow.describe().catch((error: unknown) => explainUnavailable(run, error));
  const failure =
    description.status.name === 'FAILED' ? await failureOf(run).catch((error: Error) => error) : undefined;
  const { status, transcript, now, unserved } = await readQueries(run, description);
  const children = await run.childRuns().catch(() => []);
  // What needs no worker is shown at once; what needs one is left out, and stderr says why.
  const missing = [status ? '' : 'status', transcript ? '' : 'transcript'].filter(Boolean).join(' and ');
  if (unserved) note(unservedLine(unserved, client.taskQueue, `shown without its ${missing || 'current step'}`));
  const failed = failure
    ? { type: (failure as { type?: string }).type ?? failure.name, message: failure.message }
    : undefined;
  const retrying = retryingPhases(description);
  const notification = await run.notification(description).catch(() => null);
  const actions = await run.billableActions();
  const forks = await forkLinks(client, id, description);
  const verdicts = (status?.events ?? []).flatMap((event) =>
    event.event_type === 'custom_event' && event.event_name === 'guardrail_verdict' ? [event] : [],
  );
  if (values.json)
    return {
      workflow_id: id,
      status,
      ...(failed ? { failure: failed } : {}),
      ...(notification ? { notification } : {}),
      ...(retrying.length > 0 ? { retrying } : {}),
      ...(children.length > 0 ? { children } : {}),
      ...(forks.from ? { forked_from: forks.from } : {}),
      ...(forks.forks.length > 0 ? { forks: forks.forks } : {}),
      ...(verdicts.length > 0
        ? {
            guardrail_verdicts: verdicts.map((event) => ({
              ...(event.data as object),
              tool_call_id: event.tool_call_id,
            })),
          }
        : {}),
      ...(buildOf(description) ? { build: buildOf(description) } : {}),
      ...(unserved ? { waiting_for_worker: true } : {}),
      actions,
      transcript,
    };
  // Without the status query, the state the run last reported (its search attribute), else Temporal's.
  print(
    `${description.type} ${id}: ${status?.state ?? runSummaryOf(description).status}` +
      (status
        ? `, iteration ${status.iteration}, ${status.llm_calls} model call(s), ${status.tool_calls} tool call(s)`
        : ''),
  );
  if (status?.context && (status.context.window_tokens !== null || status.context.compactions > 0))
    print(
      `context: about ${status.context.tokens} tokens${status.context.window_tokens !== null ? ` of a ${status.context.window_tokens}-token window (compacts above ${status.context.compact_at_tokens})` : ''}, ${status.context.compactions} compaction(s)`,
    );
  if (status?.budget)
    print(
      `budget: ${budgetLine(status.budget)}${status.budget.awaiting ? ` (waiting for an extension: ${status.budget.awaiting.join(', ')})` : ''}`,
    );
  if (failed) print(`failed: ${failed.type}: ${failed.message}`);
  if (status?.last_turn_failure) print(`last turn failed: ${failedTurnText(status.last_turn_failure)}`);
  if (now) print(`now: ${now}`);
  for (const wait of status?.waiting ?? [])
    print(
      `waiting: ${wait.tool} until ${wait.wake_at}${wait.event ? ` for event '${wait.event}'` : ''}${wait.reason ? ` (${wait.reason})` : ''}`,
    );
  if (status?.held_events) print(`events held for a later wait: ${status.held_events}`);
  for (const phase of retrying)
    print(
      `retrying: ${phase.activity}, attempt ${phase.attempt}; last error: ${phase.last_failure.type}: ${phase.last_failure.message}`,
    );
  if (notification) print(`notify: ${notificationLine(notification)}`);
  for (const verdict of verdicts) print(guardrailVerdictLine(verdict));
  for (const pending of status?.pending_approvals ?? [])
    print(
      `waiting for approval: ${pending.tool_name} ${JSON.stringify(pending.arguments)} (call ${pending.tool_call_id})`,
    );
  const build = buildOf(description);
  if (build) print(`build: ${build}`);
  if (forks.from)
    print(`forked from ${childLink(forks.from.workflow_id)} at ${forkPoint(forks.from.at, forks.from.unit)}`);
  for (const fork of forks.forks)
    print(`fork at ${fork.unit} ${fork.at ?? '?'}: ${fork.status.padEnd(10)} ${childLink(fork.workflow_id)}`);
  if (children.length > 0) print(`child runs (sub-agents and forks): ${children.length}`);
  for (const child of children) print(`  ${child.status.padEnd(10)} ${childLink(child.workflow_id)}`);
  print(`history: ${description.historyLength} events, ${description.historySize ?? 0} bytes`);
  print(`billable actions: ${actionsLine(actions)}`);
  for (const line of transcriptLines(transcript ?? [])) print(line);
  return undefined;
}

/**
 * Where a fork came from (its start memo), and the forks of this run (a visibility query; none when the
 * namespace lacks `PatchloopForkOf`).
 */
async function forkLinks(
  client: PatchloopClient,
  id: string,
  description: WorkflowExecutionDescription,
): Promise<{ from: ForkMemo | undefined; forks: ForkSummary[] }> {
  return { from: forkMemoOf(description.memo), forks: await client.forksOf(id).catch(() => []) };
}

/** Where the run's end notification stands, in one line. */
function notificationLine(notification: NotificationState): string {
  const error = (last: { type: string; message: string }) => `${last.type}: ${last.message}`;
  switch (notification.state) {
    case 'delivered':
      return `delivered at ${notification.delivered_at} after ${notification.attempts} attempt(s) (HTTP ${notification.http_status})`;
    case 'retrying':
      return `retrying, attempt ${notification.attempt}; last error: ${error(notification.last_error)}`;
    case 'delivering':
      return `delivering, attempt ${notification.attempt}`;
    case 'gave_up':
      return `gave up${notification.attempts !== null ? ` after ${notification.attempts} attempt(s)` : ''}: ${error(notification.last_error)}`;
  }
}

/** Worker Versioning: the deployment version the run is on, and how (`pinned`, `auto_upgrade`); none unversioned. */
function buildOf(description: { raw: { workflowExecutionInfo?: unknown } }): string | undefined {
  const info = (
    description.raw.workflowExecutionInfo as
      | { versioningInfo?: { deploymentVersion?: { deploymentName?: string; buildId?: string }; behavior?: unknown } }
      | undefined
  )?.versioningInfo;
  const version = info?.deploymentVersion;
  if (!version?.buildId) return undefined;
  const behavior = info?.behavior === 1 ? 'pinned' : info?.behavior === 2 ? 'auto-upgrade' : 'unspecified';
  return `${version.deploymentName}/${version.buildId} (${behavior})`;
}

/** How to look at a child run: the command, and its page in the Temporal web UI when that is known. */
function childLink(workflowId: string): string {
  const page = workflowUiUrl(configFromEnvironment(), workflowId);
  return `${workflowId} (patchloop show ${workflowId}${page ? `, ${page}` : ''})`;
}

/**
 * What `show` asks a worker for (status, transcript, what the run does now), each waited for a few
 * seconds at most for a running run (`askingWorker`); `unserved` says what no worker did meanwhile. A
 * run that completed gives its transcript from its result.
 */
async function readQueries(run: RunHandle, description: WorkflowExecutionDescription) {
  // A closed run's queries replay its history on a worker: they wait as long as the server lets them.
  const worker = askingWorker(run, description, description.closeTime ? undefined : WORKER_ANSWER_MS);
  const [status, transcript, now] = await Promise.all([
    worker.ask(() => run.status()),
    worker.ask(() => run.transcript()),
    description.status.name === 'RUNNING' ? worker.ask(() => currentDetails(run)) : undefined,
  ]);
  return {
    status,
    transcript: transcript ?? (description.status.name === 'COMPLETED' ? await recordedTranscriptOf(run) : undefined),
    now,
    unserved: worker.unserved(),
  };
}

/** The transcript a completed run's result records (no worker needed); undefined when it left it out. */
async function recordedTranscriptOf(run: RunHandle): Promise<Message[] | undefined> {
  return recordedTranscript((await run.workflow.result().catch(() => null)) as AgentRunResult | null) ?? undefined;
}

/** The workflow's own account of what it is doing (Temporal's current details). */
async function currentDetails(run: RunHandle): Promise<string | undefined> {
  const metadata = await run.workflow.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata?.currentDetails || undefined;
}

/** One line per message: tool calls with their arguments, tool results under their tool's name. */
export function transcriptLines(transcript: Message[]): string[] {
  const names = new Map<string, string>();
  return transcript.map((message) => {
    const role = String(message['role']);
    const calls = Array.isArray(message['tool_calls'])
      ? (message['tool_calls'] as Array<{ id: string; function: { name: string; arguments: string } }>)
      : [];
    for (const call of calls) names.set(call.id, call.function.name);
    const content = message['content'];
    const text = typeof content === 'string' ? content : content === null ? '' : JSON.stringify(content);
    if (role === 'tool') return `${'tool'.padEnd(9)} ${names.get(String(message['tool_call_id'])) ?? 'tool'}: ${text}`;
    const asked = calls.map((call) => `${call.function.name} ${call.function.arguments}`).join('; ');
    return `${role.padEnd(9)} ${text}${asked ? `${text ? ' ' : ''}[calls ${asked}]` : ''}`;
  });
}

export type { AgentRunResult };

/** Each limit that is set, as spent / limit. */
function budgetLine(budget: NonNullable<RunStatus['budget']>): string {
  return Object.entries(budget.limit)
    .filter(([, limit]) => limit !== null)
    .map(([name, limit]) => `${name.replace(/^max_/, '')} ${budget.spent[name] ?? 0} / ${limit}`)
    .join(', ');
}
