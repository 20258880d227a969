import { isGrpcServiceError, type ConnectionLike, type WorkflowExecutionDescription } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

const { PendingWorkflowTaskState, PendingActivityState } = temporal.api.enums.v1;

/** A task of a run that no worker has taken yet: which, on which task queue, and since when. */
export interface WorkerWait {
  /** `first task` (the run never ran), `next task`, `activity <type>`, or `query` (asked, not answered). */
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

/**
 * The command that starts a worker for a task of a run: plain for the task queue the reader's settings
 * name (`defaultQueue`), with --task-queue for another, tools only for a tool batch routed elsewhere.
 */
export function workerCommandFor(wait: Pick<WorkerWait, 'task' | 'taskQueue'>, defaultQueue: string): string {
  if (wait.taskQueue === defaultQueue) return 'npx patchloop worker';
  const toolsOnly = wait.task === 'activity toolBatch' ? ' --tools-only' : '';
  return `npx patchloop worker${toolsOnly} --task-queue ${wait.taskQueue}`;
}

/** What no worker has done for the run, in words: taken one of its tasks, or answered a query. */
export function unansweredTask(wait: Pick<WorkerWait, 'task'>): string {
  return wait.task === 'query' ? 'answered a query of the run' : `taken the run's ${wait.task}`;
}

/**
 * Whether a query (or another call a worker must answer) failed only because no worker answered: the
 * reader's own deadline, the server's ("query timed out before a worker could process it", about 30 s
 * after a worker was last seen), or, once the server has seen no poller for a while, its refusal at
 * once ("no poller seen for task queue recently, worker may be down", FAILED_PRECONDITION).
 */
export function unansweredByWorker(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause)
    if (isGrpcServiceError(cause) && NO_WORKER_CODES.includes(cause.code)) return true;
  return false;
}

/** gRPC's status codes DEADLINE_EXCEEDED and FAILED_PRECONDITION (fixed by the gRPC protocol). */
const NO_WORKER_CODES: readonly number[] = [4, 9];

/** How long a task of a run (or a query) may wait for a worker before a reader says so. */
export const WORKER_WAIT_NOTICE_MS = 5_000;

/**
 * How long a reader that shows what it can without a worker (`show`, a console page) waits for one to
 * answer a query: under the 5 s in which it says so.
 */
export const WORKER_ANSWER_MS = 3_000;

/**
 * Asks a run's queries for a reader that does not wait for a worker: each query waits `ms` at most
 * (`WORKER_ANSWER_MS`; undefined: as long as the server lets it, about 30 s, for a closed run whose
 * history a worker replays to answer), and is not sent when a task of the run has waited
 * `WORKER_WAIT_NOTICE_MS` for a worker already; a query that failed otherwise answers undefined too.
 * `unserved` then says what no worker did: the task that waits, or a query left unanswered.
 */
export function askingWorker(
  run: { workflow: { client: { connection: ConnectionLike } } },
  description: WorkflowExecutionDescription,
  ms: number | undefined = WORKER_ANSWER_MS,
) {
  const waiting = workerWaitOf(description);
  const known = waiting && waiting.waitedMs >= WORKER_WAIT_NOTICE_MS ? waiting : undefined;
  const started = Date.now();
  let unanswered = false;
  return {
    async ask<T>(query: () => Promise<T>): Promise<T | undefined> {
      if (known) return undefined;
      const answer = await answeredWithin(run, ms, query).catch(() => undefined);
      if (answer !== NO_ANSWER) return answer;
      unanswered = true;
      return undefined;
    },
    unserved(): WorkerWait | undefined {
      if (known || !unanswered) return known;
      return { task: 'query', taskQueue: description.taskQueue, waitedMs: Date.now() - started };
    },
  };
}

/**
 * A query's answer, or `NO_ANSWER` when no worker answered within `ms` (none runs for the run's task
 * queue, or the one that polled has died; undefined: the server's own limit): readers that show what
 * they can without it (a console page, `show`) wait that long at most. Other failures throw.
 */
async function answeredWithin<T>(
  run: { workflow: { client: { connection: ConnectionLike } } },
  ms: number | undefined,
  query: () => Promise<T>,
): Promise<T | typeof NO_ANSWER> {
  try {
    return await (ms === undefined ? query() : run.workflow.client.connection.withDeadline(Date.now() + ms, query));
  } catch (error) {
    if (unansweredByWorker(error)) return NO_ANSWER;
    throw error;
  }
}

export const NO_ANSWER = Symbol('no worker answered');
