import type { StreamResponse } from '@a2a-js/sdk';
import type { RunHandle } from '../../client/patchloop-client';
import { runEvents } from '../run-events';
import { closedRunUpdates } from './run-outcome';
import { endsStream, updatesOf, type TaskIds } from '../../a2a/task-updates';

/**
 * The task's updates from the run's events after `after` (`runEvents`), until the task reaches a final
 * state or `signal` stops it. A run that closed without a last event (it failed, or was terminated)
 * ends with its outcome.
 */
export async function* runUpdates(
  run: RunHandle,
  ids: TaskIds,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<StreamResponse, void, undefined> {
  for await (const event of runEvents(run, after, signal))
    for (const update of updatesOf(ids, event)) {
      yield update;
      if (endsStream(update)) return;
    }
  if (!signal.aborted) yield* await closedRunUpdates(run, ids, signal);
}
