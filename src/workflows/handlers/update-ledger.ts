import type { UpdateDefinition } from '@temporalio/common';
import { currentUpdateInfo, setHandler } from '@temporalio/workflow';
import { failure, FailureType } from '../../common';
import {
  RECENT_UPDATES,
  RECENT_UPDATE_RESULT_CHARS,
  RECENT_UPDATES_RESULT_CHARS,
  type RecentUpdate,
} from '../../runtime';
import type { Run } from '../run/run-state';

/**
 * Updates applied once across continue-as-new. The server deduplicates an update id within one run
 * only: when a run continues as new in the workflow task that completes an update, the server may
 * drop the completion and the client's retry (same update id) lands on the new run (temporalio/temporal
 * #6375). The run keeps the ids of its latest updates with their results and carries them on: a retry
 * is answered with the recorded result instead of being applied twice.
 */

function recorded(run: Run): RecentUpdate | undefined {
  const id = currentUpdateInfo()?.id;
  return id === undefined ? undefined : run.durable.recent_updates.find((entry) => entry.id === id);
}

/**
 * Keeps this update's result (or that it had one too large to keep), the newest `RECENT_UPDATES`,
 * their results within `RECENT_UPDATES_RESULT_CHARS` (the oldest give theirs up first).
 */
function record(run: Run, result: unknown): void {
  const id = currentUpdateInfo()?.id;
  if (id === undefined) return;
  const text = JSON.stringify(result ?? null);
  const entry: RecentUpdate =
    text.length <= RECENT_UPDATE_RESULT_CHARS ? { id, result: JSON.parse(text) } : { id, result_dropped: true };
  const kept = [...run.durable.recent_updates, entry].slice(-RECENT_UPDATES);
  let chars = 0;
  for (let index = kept.length - 1; index >= 0; index -= 1) {
    const update = kept[index]!;
    if (!('result' in update)) continue;
    chars += JSON.stringify(update.result ?? null).length;
    if (chars > RECENT_UPDATES_RESULT_CHARS) kept[index] = { id: update.id, result_dropped: true };
  }
  run.durable.recent_updates = kept;
}

/**
 * `setHandler` for an update that must take effect once per update id in the whole run chain: the
 * validator and handler run for a new id; a repeated id gets the first result.
 */
export function setOnceUpdateHandler<Ret, Args extends [unknown]>(
  run: Run,
  definition: UpdateDefinition<Ret, Args>,
  handler: (...args: Args) => Ret | Promise<Ret>,
  options: { validator?: (...args: Args) => void; description?: string } = {},
): void {
  setHandler(
    definition,
    async (...args: Args): Promise<Ret> => {
      const earlier = recorded(run);
      if (earlier) {
        if ('result' in earlier) return earlier.result as Ret;
        throw failure(
          FailureType.UpdateRepeated,
          `update ${earlier.id} was already applied before the run continued as new; its result was too large to keep`,
        );
      }
      const result = await handler(...args);
      record(run, result);
      return result;
    },
    {
      ...(options.description ? { description: options.description } : {}),
      validator: (...args: Args) => {
        if (recorded(run)) return;
        options.validator?.(...args);
      },
    },
  );
}
