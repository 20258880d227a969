import { setTimeout as sleep } from 'node:timers/promises';
import type { RunHandle } from '../client/patchloop-client';
import { workerWaitOf, type WorkerWait } from '../client/worker-wait';

/** How long a task of the run may wait for a worker before a command says so. */
export const WORKER_WAIT_NOTICE_MS = 5_000;
/** While it still waits, the notice comes again this often. */
const REPEAT_MS = 30_000;

/** What a command prints to stderr: notes about the run, beside its output. */
export const note = (line: string) => void process.stderr.write(`${line}\n`);

/**
 * The command that starts a worker for the waiting task: plain for the task queue this shell's
 * settings name, with --task-queue for another, tools only for a tool batch routed elsewhere.
 */
function workerCommandFor(wait: WorkerWait, taskQueue: string): string {
  if (wait.taskQueue === taskQueue) return 'npx patchloop worker';
  const toolsOnly = wait.task === 'activity toolBatch' ? ' --tools-only' : '';
  return `npx patchloop worker${toolsOnly} --task-queue ${wait.taskQueue}`;
}

/** One line: which queue, which task, for how long, and what to start. */
export function waitingLine(wait: WorkerWait, taskQueue: string): string {
  return (
    `waiting for a worker on task queue '${wait.taskQueue}' (no worker has taken the run's ${wait.task} for ` +
    `${Math.round(wait.waitedMs / 1000)} s; start one with \`${workerCommandFor(wait, taskQueue)}\`)`
  );
}

/**
 * While a command waits on a run (follow, chat), says when a task of the run waits for a worker
 * (after 5 s, then every 30 s while it still does, and again when it waits for another task), and
 * when a worker has taken it. Judged by the run itself (`workerWaitOf`). Returns a function that stops
 * watching.
 */
export function watchForWorker(run: RunHandle, taskQueue: string, print: (line: string) => void = note): () => void {
  const stop = new AbortController();
  let noticed: { task: string; waitedMs: number } | undefined;
  const watch = async () => {
    while (!stop.signal.aborted) {
      const description = await run.workflow.describe().catch(() => undefined);
      if (stop.signal.aborted) return;
      const wait = description ? workerWaitOf(description) : undefined;
      if (wait && wait.waitedMs >= WORKER_WAIT_NOTICE_MS) {
        if (!noticed || noticed.task !== wait.task || wait.waitedMs - noticed.waitedMs >= REPEAT_MS) {
          print(waitingLine(wait, taskQueue));
          noticed = { task: wait.task, waitedMs: wait.waitedMs };
        }
      } else if (noticed && description?.status.name === 'RUNNING') {
        print(`a worker has taken the run's ${noticed.task}: the run goes on`);
        noticed = undefined;
      }
      await sleep(1000, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  };
  void watch();
  return () => stop.abort();
}
