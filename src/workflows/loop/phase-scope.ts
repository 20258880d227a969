import { CancellationScope, condition, sleep } from '@temporalio/workflow';
import type { Run } from '../run/run-state';
import { failure, FailureType } from '../../common';

/**
 * Runs one phase in its own cancellation scope, so an abort cancels exactly this phase. After an abort
 * the wait for the phase's partial result is bounded: a phase on a dead worker must not hold the run.
 */
export async function inPhaseScope<T>(run: Run, abortWaitSeconds: number, start: () => Promise<T>): Promise<T> {
  const scope = new CancellationScope();
  const deadlineScope = new CancellationScope();
  run.live.phase = scope;
  const phase = scope.run(start);
  const deadline = deadlineScope.run(async (): Promise<never> => {
    await condition(() => run.live.abort.requested);
    await sleep(`${abortWaitSeconds}s`, {
      summary: `abort: waits up to ${abortWaitSeconds} s for the phase to hand back its partial results`,
    });
    throw failure(FailureType.AbortWaitExpired, 'the phase did not hand back its results in time after the abort');
  });
  try {
    const result = await Promise.race([phase, deadline]);
    // Everything in the scope has settled. A scope stays reachable from its parent for the whole run,
    // and so does what its activities and timers hook onto it (their inputs too), until it is cancelled:
    // cancelling a settled scope sends no command and lets all of that go.
    scope.cancel();
    return result;
  } finally {
    run.live.phase = null;
    deadlineScope.cancel();
    deadline.catch(() => undefined);
    phase.catch(() => undefined);
  }
}
