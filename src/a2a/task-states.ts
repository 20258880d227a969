import { TaskState } from '@a2a-js/sdk';
import { runPhaseOf, type RunPhase } from '../runtime';

/** A task's state from a run's status (`runPhaseOf`, the rule every protocol shares). */
export function taskStateOf(status: string): TaskState {
  return TASK_STATE_OF_PHASE[runPhaseOf(status)];
}

const TASK_STATE_OF_PHASE: Record<RunPhase, TaskState> = {
  working: TaskState.TASK_STATE_WORKING,
  input_required: TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
};

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
