import { WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { RunFailedError, type PatchloopClient, type RunHandle } from '../client/patchloop-client';
import { FailureType } from '../common/failure-types';
import { CliError } from './errors';

/** Whether any worker polled the task queue in the last two minutes (Temporal remembers recent pollers). */
export async function workerPolls(client: PatchloopClient): Promise<boolean> {
  const { pollers } = await client.temporal.workflowService.describeTaskQueue({
    namespace: client.temporal.options.namespace,
    taskQueue: { name: client.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const recent = Date.now() - 2 * 60 * 1000;
  return (pollers ?? []).some((poller) => Number(poller.lastAccessTime?.seconds ?? 0) * 1000 >= recent);
}

export function noWorkerNotice(client: PatchloopClient): string {
  return `no worker polls task queue '${client.taskQueue}': the run waits until one starts ('npx patchloop worker', or 'npx patchloop worker --fake-model' offline)`;
}

/**
 * Waits until the worker has resolved the run's agent (its `react_start` event), so an unknown agent
 * fails the command with the names the worker serves instead of a run that failed unseen.
 */
export async function agentResolved(run: RunHandle, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const description = await run.workflow.describe();
    if (description.status.name === 'FAILED') await failureOf(run);
    if (description.status.name !== 'RUNNING') return;
    const status = await run.status().catch(() => undefined);
    if (status?.events.some((event) => event.event_type === 'react_start')) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Throws the failure of a run that failed, readable (the failure's own message and type). */
export async function failureOf(run: RunHandle): Promise<never> {
  try {
    await run.result();
  } catch (error) {
    if (error instanceof RunFailedError)
      throw new CliError(error.causeMessage, (error.type ?? FailureType.RunFailed) as FailureType);
    throw error;
  }
  throw new Error(`run ${run.workflowId} is not failed`);
}

/** For commands on an id: a run that does not exist or ended says so, instead of a bare SDK error. */
export async function explainUnavailable(run: RunHandle, error: unknown): Promise<never> {
  if (error instanceof WorkflowNotFoundError)
    throw new CliError(
      `no run or session with id '${run.workflowId}' (see 'npx patchloop list')`,
      FailureType.NotFound,
    );
  const description = await run.workflow.describe().catch(() => undefined);
  if (description?.status.name === 'FAILED') await failureOf(run);
  if (description && description.status.name !== 'RUNNING')
    throw new CliError(`${run.workflowId} has ended (${description.status.name.toLowerCase()})`, FailureType.RunEnded);
  throw error;
}
