import type { ApplicationFailure } from '@temporalio/workflow';
import { failure, FailureType } from '../../common';

/**
 * Why an update validator refuses an update: a non-retryable `UpdateRefused` failure with the reason and
 * nothing else. A plain `Error` would reach callers as a retryable failure carrying the worker's stack
 * (its source paths, through Temporal's HTTP API too); the refusal is the run's answer, not a bug.
 */
export function refusal(
  reason: string,
  type: typeof FailureType.UpdateRefused | typeof FailureType.EventAlreadyDelivered = FailureType.UpdateRefused,
  details?: unknown[],
): ApplicationFailure {
  const refused = failure(type, reason, details ? { details } : {});
  refused.stack = '';
  return refused;
}
