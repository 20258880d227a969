import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { ContextError } from '../../context';
import { attemptFailureIn, type RunSpending, type UnprocessedMessage } from '../../runtime';
import { carriedFailure, failure, FailureType } from '../../common';

/** Failures that end a run: readable, typed and non-retryable, so nothing is left stuck. */
export function asRunFailure(error: unknown): unknown {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof ContextError) return failure(FailureType.InvalidTranscript, error.message);
  if (error instanceof ActivityFailure) return activityFailure(error);
  return error;
}

/** A failure that ended one turn of a session, as its `send` reply reports it. */
export function turnFailure(error: unknown): { type: string; message: string } | null {
  const ended = asRunFailure(error);
  if (!(ended instanceof ApplicationFailure)) return null;
  return { type: ended.type ?? 'Error', message: ended.message };
}

/** The run's failure, carrying the accepted messages the model never saw (in its details). */
export function withUnprocessedMessages(ended: unknown, unprocessed: UnprocessedMessage[]): unknown {
  return unprocessed.length === 0 ? ended : withDetail(ended, { unprocessed_messages: unprocessed });
}

/** A sub-agent run's failure, carrying what it spent (in its details), for its caller to charge. */
export function withSpending(ended: unknown, spent: RunSpending): unknown {
  return withDetail(ended, { spent });
}

/** The failure with one more entry in its details. */
function withDetail(ended: unknown, detail: Record<string, unknown>): unknown {
  if (!(ended instanceof ApplicationFailure)) return ended;
  return carriedFailure(ended.type, ended.message, {
    details: [...(ended.details ?? []), detail],
    ...(ended.cause ? { cause: ended.cause } : {}),
  });
}

function activityFailure(error: ActivityFailure): ApplicationFailure {
  const cause = error.cause;
  // The retry budget ran out: the last attempt's failure says why. A timeout wraps it, or (when the
  // budget ran out during an attempt) only the attempt's heartbeat details record it.
  const recorded =
    cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE'
      ? attemptFailureIn(cause.lastHeartbeatDetails)
      : undefined;
  const last =
    cause instanceof TimeoutFailure && cause.cause
      ? cause.cause
      : recorded
        ? carriedFailure(recorded.type, recorded.message, { retryable: true })
        : cause;
  const type =
    last instanceof ApplicationFailure
      ? (last.type ?? FailureType.PhaseFailed)
      : cause instanceof TimeoutFailure
        ? FailureType.PhaseTimedOut
        : FailureType.PhaseFailed;
  const budgetSpent =
    error.retryState === 'TIMEOUT' || (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE');
  const message = last?.message ?? error.message;
  // A failure that explains itself (an unknown agent names the ones served) needs no prefix.
  if (type === FailureType.UnknownAgent || type === FailureType.UnknownFunction) return carriedFailure(type, message);
  const phase = PHASE_NAMES[error.activityType] ?? error.activityType;
  const prefix = budgetSpent ? `${phase} gave up: its retry budget ran out; last error: ` : `${phase} failed: `;
  return carriedFailure(type, `${prefix}${message}`);
}

/** What each activity does, in the words a failure message uses. */
const PHASE_NAMES: Record<string, string> = {
  describeAgent: 'resolving the agent',
  describeAgentLocally: 'resolving the agent',
  prepareFunction: 'preparing the function',
  llmPhase: 'the model call',
  toolBatch: 'the tool batch',
  reviewToolCalls: 'reviewing tool calls for approval',
};
