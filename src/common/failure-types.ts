import { ApplicationFailure } from '@temporalio/common';

/**
 * What a run fails with, in one place: the failure types activities throw, workflows decide on
 * (`nonRetryableErrorTypes`) and end runs with, updates are refused with, and events report; clients
 * catch them (`RunFailedError.type`, the CLI's `{"error": {"type"}}` of a failed run). A type is a
 * contract: never rename one that runs or clients may have seen. Workflow-safe (`ApplicationFailure` is
 * the SDK's, in the sandbox too). Build failures with `failure()`, never with a loose string.
 *
 * Beside them, for other audiences: what the CLI reports of its own (`CliErrorType`,
 * `common/cli-error-types.ts`) and the context core's errors by kind (`ContextErrorType`,
 * `context/errors.ts`).
 */
export const FailureType = {
  // The provider could not answer, or answered incompletely: retried within the LLM retry budget.
  ProviderUnavailable: 'ProviderUnavailable',
  ProviderRateLimited: 'ProviderRateLimited',
  ProviderStreamIncomplete: 'ProviderStreamIncomplete',
  ProviderMalformedReply: 'ProviderMalformedReply',
  // The provider refused the request: retrying cannot help (NON_RETRYABLE_PROVIDER_ERRORS).
  ProviderRejected: 'ProviderRejected',
  ProviderAuthFailed: 'ProviderAuthFailed',
  ProviderQuotaExceeded: 'ProviderQuotaExceeded',
  // The provider answered with nothing (no text, no tool calls, no refusal), again and again.
  ProviderEmptyReply: 'ProviderEmptyReply',
  ContextTooLong: 'ContextTooLong',
  InvalidLlmRequest: 'InvalidLlmRequest',
  // The LLM activity could not load its request from the workflow (retried: the run is busy or moved on).
  RequestUnavailable: 'RequestUnavailable',
  StaleRequest: 'StaleRequest',
  // A run's input, agent or function cannot be served: the run fails at once.
  InvalidRunInput: 'InvalidRunInput',
  UnsupportedStateVersion: 'UnsupportedStateVersion',
  UnknownAgent: 'UnknownAgent',
  UnknownFunction: 'UnknownFunction',
  // A schedule's session (\`--session\`) does not exist, is not a chatSession, or has ended: the fire fails.
  UnknownSession: 'UnknownSession',
  // A fork's point cannot be read: its run does not exist or is not an agentRun, or made no model request
  // at that iteration (docs/fork-and-evals.md). The fork fails at once.
  ForkUnavailable: 'ForkUnavailable',
  // An agent's MCP server could not list its tools (after a few attempts): the run fails at its start.
  McpServerUnavailable: 'McpServerUnavailable',
  // An agent's needs_approval or tool_task_queues names a tool it does not have (neither registered nor
  // listed by its MCP servers): the run fails at its start. Agents without MCP servers are refused at
  // worker start instead (BadConfiguration).
  UnknownAgentTool: 'UnknownAgentTool',
  InvalidFunctionArgs: 'InvalidFunctionArgs',
  InvalidFunctionOutput: 'InvalidFunctionOutput',
  FunctionAborted: 'FunctionAborted',
  InvalidTranscript: 'InvalidTranscript',
  ResultTooLarge: 'ResultTooLarge',
  AbortWaitExpired: 'AbortWaitExpired',
  EncryptionKeyUnknown: 'EncryptionKeyUnknown',
  // A phase ended without a typed failure of its own (the activity's failure carries no type).
  PhaseFailed: 'PhaseFailed',
  PhaseTimedOut: 'PhaseTimedOut',
  // The worker running a phase shut down (SIGTERM, a deploy): the phase runs again on another worker.
  WorkerShutdown: 'WorkerShutdown',
  // An update refused after validation (an approval decision the run cannot take).
  ApprovalRefused: 'ApprovalRefused',
  // An update a run's validator refused (the run has ended, a message too large, not a budget extension):
  // the update was not applied, and sending it again as it is cannot change that.
  UpdateRefused: 'UpdateRefused',
  // An event whose key the run applied already (`deliver_event`): refused before anything is recorded, so
  // a repeat costs the run no history; clients answer it as delivered (`duplicate`).
  EventAlreadyDelivered: 'EventAlreadyDelivered',
  // A retried update that the run applied before it continued as new, whose result it could not keep.
  UpdateRepeated: 'UpdateRepeated',
  // A guardrail blocked the run's input or its answer (docs/guardrails.md): the run, or a session's turn,
  // ends with the check's name and reason; nothing of the blocked text is in the failure or the result.
  GuardrailBlocked: 'GuardrailBlocked',
  // A tool call's error, as its events report it (the model gets the error as the call's result).
  ToolError: 'ToolError',
  ToolTimeout: 'ToolTimeout',
  // A run's end notification (`notify`), as its notifier reports it; never the run's own failure.
  // Tried again: the receiver could not be reached, timed out, or answered 408, 429 or 5xx.
  NotifyUnreachable: 'NotifyUnreachable',
  // Not tried again: the receiver refused the call (a 3xx or another 4xx), or the key's variable is unset.
  NotifyRejected: 'NotifyRejected',
  NotifySecretMissing: 'NotifySecretMissing',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** LLM failures that end a call at once: retrying cannot help. */
export const NON_RETRYABLE_PROVIDER_ERRORS: FailureType[] = [
  FailureType.ProviderRejected,
  FailureType.ProviderAuthFailed,
  FailureType.ProviderQuotaExceeded,
  FailureType.ProviderEmptyReply,
  FailureType.ContextTooLong,
  FailureType.InvalidLlmRequest,
];

/**
 * A failure whose type another failure recorded (a phase's last attempt, a classified provider error):
 * the type passes on unchanged, whatever it is. New failures use `failure()`.
 */
export function carriedFailure(
  type: string | null | undefined,
  message: string,
  options: { retryable?: boolean; details?: unknown[]; cause?: Error; nextRetryDelay?: number } = {},
): ApplicationFailure {
  return ApplicationFailure.create({
    type: type ?? undefined,
    message,
    nonRetryable: options.retryable !== true,
    ...(options.details ? { details: options.details } : {}),
    ...(options.cause ? { cause: options.cause } : {}),
    ...(options.nextRetryDelay !== undefined ? { nextRetryDelay: options.nextRetryDelay } : {}),
  });
}

/**
 * A typed failure: non-retryable unless `retryable` says so (an activity's retryable failures are
 * retried by its retry policy; a workflow's failure always ends the run).
 */
export function failure(
  type: FailureType,
  message: string,
  options: { retryable?: boolean; details?: unknown[]; cause?: Error; nextRetryDelay?: number } = {},
): ApplicationFailure {
  return carriedFailure(type, message, options);
}
