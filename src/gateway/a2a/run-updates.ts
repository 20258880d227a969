import type { StreamResponse } from '@a2a-js/sdk';
import type { RunHandle } from '../../client/patchloop-client';
import { closedRunUpdates } from './run-outcome';
import { endsStream, updatesOf, type TaskIds } from '../../a2a/task-updates';

/** How often a follower looks for new events while the run has none. */
const POLL_MS = 200;
/** Events read per query. */
const PAGE_EVENTS = 200;

/** Resolves after `ms`, or at once when the signal stops the wait. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The task's updates from the run's event log after `after` (its `seq` cursor), until the task reaches a
 * final state or `signal` stops it. The log is the run's, in Temporal: a follower that starts again from
 * the cursor of a snapshot (a client that subscribes again after a gateway restart) gets every later
 * update once; while no worker answers (one was killed), it waits for the next. A run that closed
 * without a last event (it failed, or was terminated) ends with its outcome.
 */
export async function* runUpdates(
  run: RunHandle,
  ids: TaskIds,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<StreamResponse, void, undefined> {
  let closed = false;
  const watch = run.workflow.client.withAbortSignal(signal, () => run.workflow.result());
  watch.then(
    () => (closed = true),
    () => (closed = !signal.aborted),
  );
  while (!signal.aborted) {
    // Read before looking: a run that closed before this read has every event in it.
    const closedBefore = closed;
    const page = await run.events(after, PAGE_EVENTS).catch(() => undefined);
    for (const event of page?.events ?? []) {
      after = event.seq;
      for (const update of updatesOf(ids, event)) {
        yield update;
        if (endsStream(update)) return;
      }
    }
    if (page && page.events.length > 0) continue;
    if (closedBefore) {
      yield* await closedRunUpdates(run, ids, signal);
      return;
    }
    await pause(POLL_MS, signal);
  }
}
