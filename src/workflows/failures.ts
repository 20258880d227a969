import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { ContextError } from '../context';
import type { UnprocessedMessage } from '../runtime';

/** Failures that end a run: readable, typed and non-retryable, so nothing is left stuck. */
export function asRunFailure(error: unknown): unknown {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof ContextError) return ApplicationFailure.nonRetryable(error.message, 'InvalidTranscript');
  if (error instanceof ActivityFailure) return activityFailure(error);
  return error;
}

/** A failure that ended one turn of a session, as its `send` reply reports it. */
export function turnFailure(error: unknown): { type: string; message: string } | null {
  const failure = asRunFailure(error);
  if (!(failure instanceof ApplicationFailure)) return null;
  return { type: failure.type ?? 'Error', message: failure.message };
}

/** The run's failure, carrying the accepted messages the model never saw (in its details). */
export function withUnprocessedMessages(failure: unknown, unprocessed: UnprocessedMessage[]): unknown {
  if (!(failure instanceof ApplicationFailure) || unprocessed.length === 0) return failure;
  return ApplicationFailure.create({
    message: failure.message,
    type: failure.type ?? undefined,
    nonRetryable: true,
    details: [...(failure.details ?? []), { unprocessed_messages: unprocessed }],
    ...(failure.cause ? { cause: failure.cause } : {}),
  });
}

function activityFailure(error: ActivityFailure): ApplicationFailure {
  const cause = error.cause;
  // The retry budget ran out: the last attempt's failure says why (a timeout failure wraps it).
  const last = cause instanceof TimeoutFailure && cause.cause ? cause.cause : cause;
  const type =
    last instanceof ApplicationFailure
      ? (last.type ?? 'PhaseFailed')
      : cause instanceof TimeoutFailure
        ? 'PhaseTimedOut'
        : 'PhaseFailed';
  const budgetSpent =
    error.retryState === 'TIMEOUT' || (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE');
  const prefix = budgetSpent
    ? `${error.activityType} gave up: its retry budget ran out; last error: `
    : `${error.activityType} failed: `;
  return ApplicationFailure.nonRetryable(`${prefix}${last?.message ?? error.message}`, type);
}
