import { WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import { RunFailedError, type RunHandle } from '../client/patchloop-client';
import { workerWaitOf, WORKER_WAIT_NOTICE_MS, type WorkerWait } from '../client/worker-wait';
import { CliErrorType } from '../common/cli-error-types';
import type { FailureType } from '../common/failure-types';
import { CliError } from './errors';

/**
 * Waits until the worker has resolved the run's agent (its `react_start` event), so an unknown agent
 * fails the command with the names the worker serves instead of a run that failed unseen. Answers
 * what the run waits for instead when no worker has taken its task for a few seconds (none runs, or
 * the one that polled has died); nothing when the agent resolved, the run ended, or 30 s passed.
 */
export async function agentResolved(run: RunHandle, timeoutMs = 30_000): Promise<WorkerWait | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const description = await run.workflow.describe();
    if (description.status.name === 'FAILED') await failureOf(run);
    if (description.status.name !== 'RUNNING') return undefined;
    const wait = workerWaitOf(description);
    if (wait && wait.waitedMs >= WORKER_WAIT_NOTICE_MS) return wait;
    // Asked only once the run has run: a query waits for a worker to answer it.
    if (wait?.task !== 'first task') {
      const status = await run.workflow.client.connection
        .withDeadline(Date.now() + 2000, () => run.status())
        .catch(() => undefined);
      if (status?.events.some((event) => event.event_type === 'react_start')) return undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return undefined;
}

/** Throws the failure of a run that failed, readable (the failure's own message and type). */
export async function failureOf(run: RunHandle): Promise<never> {
  try {
    await run.result();
  } catch (error) {
    if (error instanceof RunFailedError)
      throw new CliError(error.causeMessage, (error.type as FailureType | undefined) ?? CliErrorType.RunFailed);
    throw error;
  }
  throw new Error(`run ${run.workflowId} is not failed`);
}

/**
 * For commands on an id: an id that names no run or session says so; a run that has ended says how and
 * when (`consequence`: what that means for the command), instead of a bare SDK error. Temporal answers
 * "not found" for a signal to a closed run too: the run's description tells the two apart.
 */
export async function explainUnavailable(
  run: RunHandle,
  error: unknown,
  consequence = 'it takes no more commands',
): Promise<never> {
  let description: WorkflowExecutionDescription;
  try {
    description = await run.workflow.describe();
  } catch (describeError) {
    if (describeError instanceof WorkflowNotFoundError)
      throw new CliError(
        `no run or session with id '${run.workflowId}' (see 'npx patchloop list')`,
        CliErrorType.NotFound,
      );
    throw error;
  }
  if (description.status.name === 'RUNNING') throw error;
  throw new CliError(
    `${run.workflowId} has already ended: ${await howItEnded(run, description)}; ${consequence} (see 'npx patchloop show ${run.workflowId}')`,
    CliErrorType.RunEnded,
  );
}

/** How a closed run ended, in words, and when: `aborted (reason) at 2026-...`, `failed (Type: message) at ...`. */
async function howItEnded(run: RunHandle, description: WorkflowExecutionDescription): Promise<string> {
  const when = description.closeTime ? ` at ${description.closeTime.toISOString()}` : '';
  const status = description.status.name;
  if (status === 'COMPLETED') {
    // A run's result says how it ended (a session's says nothing more than completed).
    const result = (await run.workflow.result().catch(() => undefined)) as
      { status?: string; abort_reason?: string } | undefined;
    if (result?.status === 'aborted') return `aborted${result.abort_reason ? ` (${result.abort_reason})` : ''}${when}`;
    if (result?.status === 'budget_exhausted') return `stopped by its budget${when}`;
    return `completed${when}`;
  }
  if (status === 'FAILED') {
    const failure = await failureOf(run).catch((failed: unknown) => failed as Error & { type?: string });
    return `failed (${failure.type ?? failure.name}: ${failure.message})${when}`;
  }
  return `${status.toLowerCase().replace(/_/g, ' ')}${when}`;
}
