import { Context } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { AgentRunOutcome, AgentRunResult } from '../runtime';
import { startHeartbeat } from './activity-context';

export interface AwaitAgentRunInput {
  workflow_id: string;
  /** The longest this attempt waits before it answers `running` (the workflow then asks again). */
  wait_seconds?: number;
}

/**
 * Waits for a run the workflow cannot await itself: a sub-agent child started by an earlier run of its
 * chain (Temporal reports a child's end to the run that started it only, so a parent that continued as
 * new reads it here), or one a start found already there. A bounded wait: after `wait_seconds` it answers
 * `running` and the workflow asks again, so no attempt outlives its timeout however long the child runs.
 */
export async function awaitAgentRun(input: AwaitAgentRunInput): Promise<AgentRunOutcome> {
  const context = Context.current();
  const stopHeartbeat = startHeartbeat(context, () => ({ awaiting: input.workflow_id }));
  const waitMs = (input.wait_seconds ?? 300) * 1000;
  let timer: NodeJS.Timeout | undefined;
  try {
    // Follows the child's own continue-as-new chain to its last run.
    const result = context.client.workflow.getHandle(input.workflow_id).result() as Promise<AgentRunResult>;
    // A wait that loses the race below still settles later: nothing is left unhandled.
    result.catch(() => undefined);
    const outcome = await Promise.race([
      result.then((value): AgentRunOutcome => ({ status: 'closed', result: value })),
      new Promise<AgentRunOutcome>((resolve) => {
        timer = setTimeout(() => resolve({ status: 'running' }), waitMs);
      }),
      new Promise<never>((_resolve, reject) => {
        const cancelled = () => reject(context.cancellationSignal.reason ?? new Error('cancelled'));
        if (context.cancellationSignal.aborted) cancelled();
        context.cancellationSignal.addEventListener('abort', cancelled, { once: true });
      }),
    ]);
    return outcome;
  } catch (error) {
    if (error instanceof WorkflowFailedError) {
      const cause = error.cause as { type?: string; message?: string; name?: string } | undefined;
      return {
        status: 'failed',
        error_type: cause?.type ?? cause?.name ?? 'WorkflowFailed',
        message: cause?.message ?? error.message,
      };
    }
    if (error instanceof WorkflowNotFoundError)
      return { status: 'failed', error_type: 'NotFound', message: `no run with workflow id ${input.workflow_id}` };
    throw error;
  } finally {
    clearTimeout(timer);
    stopHeartbeat();
  }
}
