import { log, ParentClosePolicy, patched, startChild, workflowInfo } from '@temporalio/workflow';
import {
  notificationBody,
  hostOf,
  notifierWorkflowId,
  type AgentRunInput,
  type AgentSpec,
  type NotifiedStatus,
  type NotifierInput,
  type NotifySettings,
  type RunEnding,
} from '../../runtime';
import { turnFailure } from './failures';
import type { Run } from './run-state';

/** How the run ended, for its notification (the rest the workflow's info gives). */
type RunOutcome = Omit<RunEnding, 'workflowId' | 'firstRunId' | 'runId' | 'endedAt'>;

/**
 * A run's end notification (`notify`): the run's own, else its agent's once resolved; sub-agent and
 * fork runs notify no one (their caller learns of their end). `ended` and `failed` start the notifier.
 */
export function runEndNotice(input: AgentRunInput) {
  const child = input.fork !== undefined || input.caller !== undefined;
  let notify = child ? undefined : input.notify;
  return {
    agentResolved(agent: AgentSpec): void {
      if (!child) notify ??= agent.notify;
    },
    ended(run: Run, agent: string, turn: { status: Exclude<NotifiedStatus, 'failed'>; answer: string | null }) {
      return startRunEndNotifier(notify, {
        agent,
        status: turn.status,
        answer: turn.answer,
        abortReason: turn.status === 'aborted' ? run.live.abort.reason : undefined,
        usage: run.durable.usage,
      });
    },
    failed(run: Run, failed: unknown) {
      const error = turnFailure(failed) ?? {
        type: 'Error',
        message: failed instanceof Error ? failed.message : String(failed),
      };
      return startRunEndNotifier(notify, {
        agent: input.agent,
        status: 'failed',
        answer: null,
        error,
        usage: run.durable.usage,
      });
    },
  };
}

/**
 * When the run names `notify`: starts the notifier that delivers its end notification, and waits for
 * its start only. The notifier is abandoned when the run closes, so the run's result is never held up
 * by the receiver, and never changed: a notifier that cannot start (the server refused it) is logged,
 * and the run ends as it would have. Runs without `notify` issue no command here, so their histories
 * replay as before.
 */
async function startRunEndNotifier(notify: NotifySettings | undefined, outcome: RunOutcome): Promise<void> {
  if (!notify || !patched('run-end-notify')) return;
  const info = workflowInfo();
  const input: NotifierInput = {
    url: notify.url,
    secret_env: notify.secret_env,
    retry_initial_seconds: notify.retry_initial_seconds,
    body: notificationBody({
      ...outcome,
      workflowId: info.workflowId,
      firstRunId: info.firstExecutionRunId,
      runId: info.runId,
      endedAt: new Date().toISOString(),
    }),
  };
  try {
    await startChild('notifyRunEnd', {
      workflowId: notifierWorkflowId(info.workflowId, info.firstExecutionRunId),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      args: [input],
      staticSummary: `notifies ${hostOf(notify.url)} that ${info.workflowId} ended (${outcome.status})`,
    });
  } catch (error) {
    log.warn('the notifier of the run did not start: no notification is sent', {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
