import { type Context } from '@temporalio/activity';
import { failure, FailureType } from '../common/failure-types';
import { HEARTBEAT_EVERY_MS, HEARTBEAT_FIRST_MS } from '../runtime';
import { nudgeableHeartbeat } from './abort-nudges';

/**
 * Heartbeats on a timer (not only per token: a thinking model sends none), because an activity learns
 * of a cancel only through a heartbeat's answer; the first after `HEARTBEAT_FIRST_MS`, not at the start:
 * each heartbeat that reaches the server is a billable action, and most calls end sooner. When its run is
 * aborted while it runs in this process, it heartbeats at once besides (./abort-nudges.ts).
 */
export function startHeartbeat(context: Context, details: () => unknown, intervalMs = HEARTBEAT_EVERY_MS): () => void {
  // A local activity has no heartbeats: the workflow task it runs in is its liveness.
  if (context.info.isLocal) return () => undefined;
  const beat = () => context.heartbeat(details());
  let timer: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(
    () => {
      beat();
      timer = setInterval(beat, intervalMs);
    },
    Math.min(HEARTBEAT_FIRST_MS, intervalMs),
  );
  const workflowId = context.info.workflowExecution?.workflowId;
  const unregister = workflowId ? nudgeableHeartbeat(workflowId, beat) : () => undefined;
  return () => {
    clearTimeout(first);
    clearInterval(timer);
    unregister();
  };
}

/**
 * True when the cancel is the user's abort. Partial results are returned only then; on worker
 * shutdown, pause or reset the phase throws, so it runs again elsewhere instead of recording half a result.
 */
export function isUserAbort(context: Context): boolean {
  const signal = context.cancellationSignal;
  const details = context.cancellationDetails;
  // The worker cancels a local activity itself, without the server's details: only its reason tells.
  if (context.info.isLocal) return signal.aborted && (signal.reason as Error | undefined)?.message === 'CANCELLED';
  return signal.aborted && details?.cancelRequested === true && details.workerShutdown !== true;
}

/**
 * The error to throw when cancelled for any reason other than a user abort. On worker shutdown it is a
 * retryable failure, not the SDK's cancellation: the SDK sends an activity's last heartbeat only before
 * a failure (a cancelled activity's is dropped), and that heartbeat holds the tool batch's checkpoint of
 * calls that finished during the shutdown's grace (an LLM phase's, its stream's progress). Pause and
 * reset keep the SDK's own failures.
 */
export function cancellationError(context: Context): unknown {
  // (A local activity has no heartbeat to send: it keeps the SDK's cancellation.)
  if (!context.info.isLocal && context.cancellationDetails?.workerShutdown === true)
    return failure(FailureType.WorkerShutdown, 'the worker shut down during this phase: it runs again', {
      retryable: true,
    });
  return context.cancellationSignal.reason ?? new Error('activity cancelled');
}
