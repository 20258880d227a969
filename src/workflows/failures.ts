import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { ContextError } from '../context';

/** Failures that end a run: readable, typed and non-retryable, so nothing is left stuck. */
export function asRunFailure(error: unknown): unknown {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof ContextError) return ApplicationFailure.nonRetryable(error.message, 'InvalidTranscript');
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    const type = cause instanceof ApplicationFailure ? (cause.type ?? 'PhaseFailed') : 'PhaseFailed';
    return ApplicationFailure.nonRetryable(`${error.activityType} failed: ${cause?.message ?? error.message}`, type);
  }
  return error;
}
