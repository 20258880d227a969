import { ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { carriedFailure, FailureType } from '../common';

/**
 * A delivery's failure once it gave up (a notifier's, a push watcher's): the last attempt's type and message, and how many
 * attempts there were (each attempt's failure carries its number).
 */
export function gaveUp(error: unknown): ApplicationFailure {
  let last: ApplicationFailure | undefined;
  let timedOut = false;
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof TimeoutFailure) timedOut = true;
    if (cause instanceof ApplicationFailure) last = cause;
  }
  const attempts = (last?.details?.[0] as { attempt?: number } | undefined)?.attempt;
  const why = last?.message ?? (error instanceof Error ? error.message : String(error));
  const after = timedOut ? `a day${attempts ? ` (${attempts} attempts)` : ''}` : `${attempts ?? 1} attempt(s)`;
  return carriedFailure(last?.type ?? FailureType.NotifyUnreachable, `gave up after ${after}: ${why}`, {
    details: [{ attempts: attempts ?? null, last_error: { type: last?.type ?? null, message: why } }],
  });
}
