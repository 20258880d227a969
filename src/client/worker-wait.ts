import type { WorkflowExecutionDescription } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

const { PendingWorkflowTaskState, PendingActivityState } = temporal.api.enums.v1;

/** A task of a run that no worker has taken yet: which, on which task queue, and since when. */
export interface WorkerWait {
  /** `first task` (the run never ran), `next task`, or `activity <type>`. */
  task: string;
  taskQueue: string;
  /** Milliseconds since the task was scheduled (its first scheduling, for a workflow task). */
  waitedMs: number;
}

/**
 * What the run waits for a worker to take, judged by the run itself (`describe`): its workflow task
 * scheduled and not started, or an activity scheduled, due and not started. The server's list of
 * pollers cannot tell: it remembers a worker that died for about two minutes. Undefined when nothing
 * waits for a worker (the run works, waits for a person or a timer, or has ended). The longest wait
 * wins.
 */
export function workerWaitOf(description: WorkflowExecutionDescription, now = Date.now()): WorkerWait | undefined {
  if (description.status.name !== 'RUNNING') return undefined;
  const waits: WorkerWait[] = [];
  const task = description.raw.pendingWorkflowTask;
  if (task?.state === PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED) {
    const since = optionalTsToMs(task.originalScheduledTime) ?? optionalTsToMs(task.scheduledTime);
    // A run that has not run yet: its history holds its start and this task only.
    if (since !== undefined)
      waits.push({
        task: description.historyLength <= 2 ? 'first task' : 'next task',
        taskQueue: description.taskQueue,
        waitedMs: now - since,
      });
  }
  for (const activity of description.raw.pendingActivities ?? []) {
    if (activity.state !== PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED || activity.paused) continue;
    // Between attempts it waits for its retry's time, not for a worker.
    const next = optionalTsToMs(activity.nextAttemptScheduleTime);
    if (next !== undefined && next > now) continue;
    const since = Math.max(optionalTsToMs(activity.scheduledTime) ?? now, next ?? 0);
    waits.push({
      task: `activity ${activity.activityType?.name ?? '?'}`,
      taskQueue: activity.activityOptions?.taskQueue?.name || description.taskQueue,
      waitedMs: now - since,
    });
  }
  return waits.sort((a, b) => b.waitedMs - a.waitedMs)[0];
}
