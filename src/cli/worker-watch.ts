import { setTimeout as sleep } from 'node:timers/promises';
import type { RunHandle } from '../client/patchloop-client';
import {
  unansweredByWorker,
  unansweredTask,
  workerCommandFor,
  workerWaitOf,
  WORKER_WAIT_NOTICE_MS,
  type WorkerWait,
} from '../client/worker-wait';

/** While it still waits, the notice comes again this often. */
const REPEAT_MS = 30_000;

/** What a command prints to stderr: notes about the run, beside its output. */
export const note = (line: string) => void process.stderr.write(`${line}\n`);

/** One line: which queue, which task, for how long, and what to start. */
export function waitingLine(wait: WorkerWait, taskQueue: string): string {
  return (
    `waiting for a worker on task queue '${wait.taskQueue}' (no worker has ${unansweredTask(wait)} for ` +
    `${Math.round(wait.waitedMs / 1000)} s; start one with \`${workerCommandFor(wait, taskQueue)}\`)`
  );
}

/** For a reader that does not wait (`show`): no worker serves the run, what the reader did without, what to start. */
export function unservedLine(wait: WorkerWait, taskQueue: string, without: string): string {
  return (
    `no worker serves the run on task queue '${wait.taskQueue}' (none has ${unansweredTask(wait)} for ` +
    `${Math.round(wait.waitedMs / 1000)} s): ${without}; start one with \`${workerCommandFor(wait, taskQueue)}\``
  );
}

/** The line that follows a notice once a worker has done what the run waited for. */
function resumedLine(task: string): string {
  return task === 'query'
    ? 'a worker has answered: the run is served again'
    : `a worker has taken the run's ${task}: the run goes on`;
}

/** Watching a run for a worker: `stop` ends it; `outstanding` is the task of a notice no line has closed yet. */
export interface WorkerWatch {
  stop(): void;
  readonly outstanding: string | undefined;
}

/**
 * While a command waits on a run (follow, chat, approve, send, ...), says when a task of the run waits
 * for a worker (after 5 s, then every 30 s while it still does, and again when it waits for another
 * task), and when a worker has taken it. Judged by the run itself (`workerWaitOf`); a wait goes on as
 * long as each look finds the same kind of task waiting, so a task the server schedules again (an
 * update's task moving from a dead worker's sticky queue to the run's queue) does not restart the count.
 */
export function watchForWorker(run: RunHandle, taskQueue: string, print: (line: string) => void = note): WorkerWatch {
  const stop = new AbortController();
  let noticed: { task: string; waitedMs: number } | undefined;
  let since: { task: string; at: number } | undefined;
  const watch = async () => {
    while (!stop.signal.aborted) {
      const description = await run.workflow.describe().catch(() => undefined);
      if (stop.signal.aborted) return;
      const found = description ? workerWaitOf(description) : undefined;
      const now = Date.now();
      if (found && since?.task === found.task) since.at = Math.min(since.at, now - found.waitedMs);
      else since = found ? { task: found.task, at: now - found.waitedMs } : undefined;
      const wait = found && since ? { ...found, waitedMs: now - since.at } : undefined;
      if (wait && wait.waitedMs >= WORKER_WAIT_NOTICE_MS) {
        if (!noticed || noticed.task !== wait.task || wait.waitedMs - noticed.waitedMs >= REPEAT_MS) {
          print(waitingLine(wait, taskQueue));
          noticed = { task: wait.task, waitedMs: wait.waitedMs };
        }
      } else if (noticed && description?.status.name === 'RUNNING') {
        print(resumedLine(noticed.task));
        noticed = undefined;
      }
      await sleep(1000, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  };
  void watch();
  return {
    stop: () => stop.abort(),
    get outstanding() {
      return noticed?.task;
    },
  };
}

/**
 * An update of the run (approve, reject, send, budget extend) that a worker must apply: while no worker
 * takes the run's task, says so as `follow` does, and when one has; then answers what the update answered.
 */
export async function appliedByWorker<T>(
  run: RunHandle,
  taskQueue: string,
  update: () => Promise<T>,
  print: (line: string) => void = note,
): Promise<T> {
  const watch = watchForWorker(run, taskQueue, print);
  try {
    return await update();
  } finally {
    closeWatch(watch, print);
  }
}

/**
 * Stops a watch once the command has what it waited for (the update applied, the run's end): a notice
 * still open gets its closing line, since a worker has taken the task (between two looks, say).
 */
export function closeWatch(watch: WorkerWatch, print: (line: string) => void = note): void {
  watch.stop();
  if (watch.outstanding) print(resumedLine(watch.outstanding));
}

/**
 * A query of the run (approvals): when no worker has answered it in 5 s, says so (again every 30 s),
 * asks again each time the server gives up on it, and answers once a worker does.
 */
export async function answeredByWorker<T>(
  run: RunHandle,
  taskQueue: string,
  query: () => Promise<T>,
  print: (line: string) => void = note,
): Promise<T> {
  const started = Date.now();
  let noticed = false;
  let answered = false;
  const say = async () => {
    const description = await run.workflow.describe().catch(() => undefined);
    // A task of the run that waits for a worker says more than the query does.
    const wait = (description && workerWaitOf(description)) ?? {
      task: 'query',
      taskQueue: description?.taskQueue ?? taskQueue,
      waitedMs: Date.now() - started,
    };
    if (answered) return;
    print(waitingLine(wait, taskQueue));
    noticed = true;
  };
  let timer = setTimeout(function repeat() {
    void say();
    timer = setTimeout(repeat, REPEAT_MS);
  }, WORKER_WAIT_NOTICE_MS);
  try {
    for (;;) {
      try {
        const answer = await query();
        answered = true;
        if (noticed) print(resumedLine('query'));
        return answer;
      } catch (error) {
        if (!unansweredByWorker(error)) throw error;
      }
      await sleep(1000);
    }
  } finally {
    clearTimeout(timer);
  }
}
