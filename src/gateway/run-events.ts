import type { RunHandle } from '../client/patchloop-client';
import type { RunEvent } from '../runtime';
import { workflowResult } from '../client/workflow-result';

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
 * A run's events after `after` (its `seq` cursor), until the run has closed and every event was read,
 * or `signal` stops it; the caller may stop early (a final event). The log is the run's, in Temporal: a
 * follower that starts again from a cursor (a client back after a gateway restart) gets every later
 * event once; while no worker answers (one was killed), it waits for the next. A run that closed
 * without a last event (it failed, or was terminated) just ends: its outcome is in its result.
 */
export async function* runEvents(
  run: RunHandle,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<RunEvent, void, undefined> {
  let closed = false;
  // Through the server's refusals (a cap on long polls): a refusal is no end of the run.
  const watch = workflowResult(run.workflow, { signal });
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
      yield event;
    }
    if (page && page.events.length > 0) continue;
    if (closedBefore) return;
    await pause(POLL_MS, signal);
  }
}
