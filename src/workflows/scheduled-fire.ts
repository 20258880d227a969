import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { abortSignal, FailureType, PATCHLOOP_SEARCH_ATTRIBUTES as keys } from '../common';
import {
  answerPreview,
  failedRunOutcome,
  runSpending,
  ScheduledFireInput,
  type AgentRunInputWire,
  type AgentRunResult,
  type ScheduledFireResult,
} from '../runtime';
import { parseWorkflowInput } from './run/input';

/**
 * One fire of a schedule (Temporal Schedules start it on the project's task queue). A run of an agent:
 * with a schedule budget, asks what is left (nothing: the schedule has paused itself, and no run starts),
 * starts the run as a child carrying `PatchloopSchedule`, waits for it (so overlap policies see the fire
 * running while its run runs) and charges what it spent to the schedule. A session: sends the input as a
 * user message and waits for the reply.
 */
export async function scheduledFire(rawInput: unknown): Promise<ScheduledFireResult> {
  const fire = parseWorkflowInput(ScheduledFireInput, rawInput, 'scheduledFire');
  // A fire's workflow id is the schedule's with the fire's time to the second: a trigger in the same
  // second as the fire before it gets the same id. Its run id tells them apart (charges, messages, runs).
  const { workflowId, runId: fireRun } = workflowInfo();
  const fireId = `${workflowId}/${fireRun}`;
  const { definition } = fire;
  if (definition.session !== undefined) return messageSession(definition.session, definition.input, fireId);
  const standing = await scheduleActivities().scheduleStanding({ schedule_id: fire.schedule_id, fire });
  if (standing.exhausted !== undefined) return { outcome: 'schedule_budget_exhausted', note: standing.exhausted };
  const runId = `${workflowId}-run-${fireRun.slice(0, 8)}`;
  const ended = await runAgent(fire, runId, standing);
  const spent = runSpending(ended);
  if (definition.budget)
    await scheduleActivities().chargeSchedule({ schedule_id: fire.schedule_id, fire_id: fireId, spending: spent });
  if ('failed' in ended) return { outcome: 'failed', workflow_id: runId, error: ended.error, spent };
  return { outcome: ended.result.status, workflow_id: runId, answer: answerPreview(ended.result.answer), spent };
}

type RunEnd =
  | { result: AgentRunResult }
  | { failed: ReturnType<typeof failedRunOutcome>['spent']; error: { type: string; message: string } };

/**
 * The fire's run, as a child it waits for. A fire cancelled by its schedule (overlap `cancel_other`)
 * aborts its run, which ends with a valid transcript, and still waits for it and charges what it spent.
 */
async function runAgent(
  fire: ScheduledFireInput,
  runId: string,
  standing: Awaited<ReturnType<Activities['scheduleStanding']>>,
): Promise<RunEnd> {
  const { definition } = fire;
  const input: AgentRunInputWire = {
    agent: definition.agent!,
    input: definition.input,
    ...(standing.run_budget ? { budget: standing.run_budget } : {}),
    ...(definition.notify ? { notify: definition.notify } : {}),
  };
  const child = await startChild('agentRun', {
    workflowId: runId,
    args: [input],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    cancellationType: ChildWorkflowCancellationType.ABANDON,
    ...(standing.search_attributes ? { typedSearchAttributes: [{ key: keys.schedule, value: fire.schedule_id }] } : {}),
    staticSummary: `schedule ${definition.name}: ${definition.agent}`,
  });
  CancellationScope.current().cancelRequested.catch(() =>
    CancellationScope.nonCancellable(() =>
      child.signal(abortSignal, { reason: `schedule ${definition.name} cancelled this fire (overlap cancel_other)` }),
    ).catch(() => undefined),
  );
  try {
    return { result: (await CancellationScope.nonCancellable(() => child.result())) as AgentRunResult };
  } catch (error) {
    if (!(error instanceof ChildWorkflowFailure)) throw error;
    const outcome = failedRunOutcome(error, 'ChildWorkflowFailure');
    return { failed: outcome.spent, error: { type: outcome.error_type, message: outcome.message } };
  }
}

/**
 * The fire of a schedule that feeds a session: its input as a user message, and the turn's reply. A
 * session that is not there (or refused the message) ends the fire `failed`, saying so.
 */
async function messageSession(sessionId: string, content: string, fireId: string): Promise<ScheduledFireResult> {
  let reply;
  try {
    reply = await proxyActivities<Activities>({
      // A turn may take long (tools, approvals): the heartbeat tells a lost worker, not the timeout.
      startToCloseTimeout: '7d',
      heartbeatTimeout: '30s',
      retry: { initialInterval: '1s', maximumAttempts: 5, nonRetryableErrorTypes: REFUSED_MESSAGES },
      summary: `message to ${sessionId}`,
    }).sendToSession({ session_id: sessionId, content, update_id: fireId });
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : undefined;
    if (!(cause instanceof ApplicationFailure) || !REFUSED_MESSAGES.includes(cause.type ?? '')) throw error;
    return { outcome: 'failed', workflow_id: sessionId, error: { type: cause.type!, message: cause.message } };
  }
  return {
    outcome: reply.status,
    workflow_id: sessionId,
    answer: answerPreview(reply.reply),
    ...(reply.error ? { error: reply.error } : {}),
  };
}

/** Why a message to a session cannot be delivered however often it is sent. */
const REFUSED_MESSAGES: string[] = [FailureType.UnknownSession, FailureType.UpdateRefused];

/** The schedule's short bookkeeping activities (a read, an update). */
function scheduleActivities() {
  return proxyActivities<Activities>({
    startToCloseTimeout: '1m',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 10 },
  });
}
