import { TaskState } from '@a2a-js/sdk';

/**
 * A task's state from a run's: what `status` and the visibility store say (patchloop's state, or
 * Temporal's for a run that ended without saying: terminated, timed out).
 */
export function taskStateOf(status: string): TaskState {
  switch (status) {
    case 'awaiting_approval':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'aborted':
    case 'canceled':
    case 'terminated':
      return TaskState.TASK_STATE_CANCELED;
    case 'failed':
    case 'budget_exhausted':
    case 'timed out':
      return TaskState.TASK_STATE_FAILED;
    default:
      // running, waiting (a durable wait), awaiting_budget: the run goes on by itself or by an operator.
      return TaskState.TASK_STATE_WORKING;
  }
}

/** The patchloop state `ListTasks` filters by for a task state (undefined: no filter). */
export function runStatusOf(state: TaskState): string | undefined {
  switch (state) {
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return 'awaiting_approval';
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_CANCELED:
      return 'aborted';
    case TaskState.TASK_STATE_FAILED:
      return 'failed';
    case TaskState.TASK_STATE_WORKING:
      return 'running';
    default:
      return undefined;
  }
}

/** States a task never leaves: a stream ends at one. */
export function isFinal(state: TaskState): boolean {
  return (
    state === TaskState.TASK_STATE_COMPLETED ||
    state === TaskState.TASK_STATE_FAILED ||
    state === TaskState.TASK_STATE_CANCELED ||
    state === TaskState.TASK_STATE_REJECTED
  );
}
