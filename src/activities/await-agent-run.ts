import { Context } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { failedRunOutcome, type AgentRunOutcome, type AgentRunResult } from '../runtime';
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
  const deadline = Date.now() + (input.wait_seconds ?? 300) * 1000;
  // By id only: the child's latest run, following its own continue-as-new chain.
  const handle = context.client.workflow.getHandle(input.workflow_id);
  try {
    // Polled, not long-polled: a wait that ends by the deadline leaves no request behind.
    while ((await handle.describe()).status.name === 'RUNNING') {
      if (Date.now() >= deadline) return { status: 'running' };
      await context.sleep(POLL_MS);
    }
    return { status: 'closed', result: (await handle.result()) as AgentRunResult };
  } catch (error) {
    if (error instanceof WorkflowFailedError) return failedRunOutcome(error, 'WorkflowFailed');
    if (error instanceof WorkflowNotFoundError)
      return { status: 'failed', error_type: 'NotFound', message: `no run with workflow id ${input.workflow_id}` };
    throw error;
  } finally {
    stopHeartbeat();
  }
}

/** How often a waiting caller looks at its child. */
const POLL_MS = 1000;
