import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { asRunFailure } from '../../src/workflows/run/failures';

/** The failure a workflow sees when the model call's activity gave up. */
function llmPhaseFailure(cause: Error, retryState: RetryState = RetryState.TIMEOUT): ActivityFailure {
  return new ActivityFailure('activity failed', 'llmPhase', '2', retryState, 'worker', cause);
}

describe('a model call whose retry budget ran out', () => {
  it('reports the last attempt failure the server attached to its timeout', () => {
    const last = ApplicationFailure.create({ type: 'ProviderUnavailable', message: 'provider error (503): down' });
    const timeout = new TimeoutFailure('activity timeout', undefined, 'SCHEDULE_TO_CLOSE');
    Object.assign(timeout, { cause: last });
    const failure = asRunFailure(llmPhaseFailure(timeout)) as ApplicationFailure;
    expect(failure.type).toBe('ProviderUnavailable');
    expect(failure.message).toBe(
      'the model call gave up: its retry budget ran out; last error: provider error (503): down',
    );
    expect(failure.nonRetryable).toBe(true);
  });

  it('reports the failure recorded in the heartbeat details when the timeout carries none', () => {
    const details = { iteration: 1, chars: 0, last_failure: { type: 'ProviderRateLimited', message: 'slow down' } };
    const timeout = new TimeoutFailure('activity timeout', details, 'SCHEDULE_TO_CLOSE');
    const failure = asRunFailure(llmPhaseFailure(timeout)) as ApplicationFailure;
    expect(failure.type).toBe('ProviderRateLimited');
    expect(failure.message).toBe('the model call gave up: its retry budget ran out; last error: slow down');
  });

  it('an attempt that timed out is reported as a timeout, not as the attempt before it', () => {
    const details = { iteration: 1, last_failure: { type: 'ProviderUnavailable', message: 'earlier 503' } };
    const timeout = new TimeoutFailure('activity Heartbeat timeout', details, 'HEARTBEAT');
    const failure = asRunFailure(llmPhaseFailure(timeout, RetryState.MAXIMUM_ATTEMPTS_REACHED)) as ApplicationFailure;
    expect(failure.type).toBe('PhaseTimedOut');
    expect(failure.message).toBe('the model call failed: activity Heartbeat timeout');
  });

  it('is a timeout of the phase when nothing says why', () => {
    const timeout = new TimeoutFailure('activity StartToClose timeout', { iteration: 1 }, 'START_TO_CLOSE');
    const failure = asRunFailure(llmPhaseFailure(timeout, RetryState.MAXIMUM_ATTEMPTS_REACHED)) as ApplicationFailure;
    expect(failure.type).toBe('PhaseTimedOut');
    expect(failure.message).toBe('the model call failed: activity StartToClose timeout');
  });
});
