import { msToNumber, type Duration } from '@temporalio/common/lib/time';
import { type z } from 'zod';
import type { JsonObject } from '../context';
import { providerJsonSchema, type ToolDescriptor, ConfigurationError } from '../runtime';

/** What a running tool gets besides its arguments. */
export interface ToolContext {
  /**
   * Aborted when the run is aborted, the tool's timeout passes, or the worker shuts down. Once it is
   * aborted, throw unless the side effect is complete: a value returned within 0.2 s is the call's
   * result, kept (and not run again); a call that throws in that time is known to have stopped. One
   * still running after it counts as unfinished, and unless the tool is `idempotent` the model is told
   * it may or may not have taken effect.
   */
  signal: AbortSignal;
  /**
   * `<workflowId>/<firstExecutionRunId>/<iteration>/<toolCallId>`: stable across retries, crashes,
   * replays and continue-as-new, and unique per run chain (a new run that reuses the workflow id gets
   * new keys), so a side-effecting tool can recognise a repeated attempt.
   */
  idempotencyKey: string;
  toolCallId: string;
  workflowId: string;
  iteration: number;
  /** A custom event for the run's event log (`custom_event`), emitted when the call completes. */
  emit(eventName: string, data?: JsonObject): void;
}

/** What a `needsApproval` predicate gets besides the validated arguments. */
export interface ApprovalContext {
  toolCallId: string;
  workflowId: string;
  iteration: number;
}

/** Whether a call waits for a person: always, or decided per call from its (validated) arguments. */
export type NeedsApproval<Args> = boolean | ((args: Args, context: ApprovalContext) => boolean | Promise<boolean>);

/**
 * Throw it from a tool for a failure worth another try (a rate limit, a flaky network): with a `retry`
 * policy the call runs again after a backoff, inside the same batch attempt, before its error becomes a
 * result the model sees. Other errors, invalid arguments and unknown tools are never retried.
 */
export class RetryableToolError extends Error {
  override readonly name = 'RetryableToolError';
}

/** Recognised by name too: a tool module may load its own copy of patchloop. */
export function isRetryableToolError(error: unknown): boolean {
  return error instanceof RetryableToolError || (error instanceof Error && error.name === 'RetryableToolError');
}

/** How a call is retried on `RetryableToolError` (attempts count the first one). */
export interface ToolRetryPolicy {
  maxAttempts: number;
  /** Before the second attempt; a number of milliseconds or a duration such as '200ms' or '2s'. */
  initialInterval?: Duration;
  /** Each wait is this many times the previous one (2 by default). */
  backoff?: number;
  maxInterval?: Duration;
}

/** The policy with numbers: milliseconds. */
export interface ResolvedRetryPolicy {
  maxAttempts: number;
  initialIntervalMs: number;
  backoff: number;
  maxIntervalMs: number;
}

function resolveRetry(name: string, policy: ToolRetryPolicy): ResolvedRetryPolicy {
  const resolved = {
    maxAttempts: policy.maxAttempts,
    initialIntervalMs: msToNumber(policy.initialInterval ?? 1000),
    backoff: policy.backoff ?? 2,
    maxIntervalMs: msToNumber(policy.maxInterval ?? 60_000),
  };
  if (!Number.isInteger(resolved.maxAttempts) || resolved.maxAttempts < 1)
    throw new ConfigurationError(`tool '${name}': retry.maxAttempts must be a whole number from 1`);
  if (!(resolved.backoff >= 1)) throw new ConfigurationError(`tool '${name}': retry.backoff must be at least 1`);
  return resolved;
}

/** The wait before attempt `attempt + 1`. */
export function retryDelayMs(policy: ResolvedRetryPolicy, attempt: number): number {
  return Math.min(policy.initialIntervalMs * policy.backoff ** (attempt - 1), policy.maxIntervalMs);
}

export interface ToolDefinition<Parameters extends z.ZodType> {
  name: string;
  description: string;
  /** Arguments are validated with this schema; the model gets the JSON Schema zod produces from it. */
  parameters: Parameters;
  execute: (args: z.output<Parameters>, context: ToolContext) => unknown;
  bestPractices?: string[];
  promptInjection?: string;
  timeoutSeconds?: number;
  /**
   * Calls wait for an `approve` decision before they run (arguments are repaired and validated first,
   * so nobody approves a call that would fail). A function decides per call; if it throws, the call
   * waits for a person.
   */
  needsApproval?: NeedsApproval<z.output<Parameters>>;
  /** Retries of calls that throw `RetryableToolError`; the timeout applies to each attempt. */
  retry?: ToolRetryPolicy;
  /**
   * Calling it again with the same arguments does no further harm (a read, a lookup, a write of the
   * same value, a side effect deduplicated by `idempotencyKey`). A call of any other tool that outlives
   * its timeout or its run's abort (it did not stop within 0.2 s of its `signal`) gets a result that
   * says it may or may not have taken effect and to check before calling it again; an idempotent
   * tool's call is simply reported as timed out or cancelled.
   */
  idempotent?: boolean;
  /** The task queue whose workers run this tool (`patchloop worker --tools-only --task-queue <queue>`). */
  taskQueue?: string;
  /**
   * A quick tool (pure or nearly: arithmetic, formatting, a cache lookup). A batch whose calls are all
   * fast runs as a local activity inside the workflow task that follows the model's reply, one dispatch
   * per iteration instead of two. It then has no heartbeat checkpoints (a retried batch runs every call
   * again, with the same idempotency keys), and signals such as an abort wait until the batch ends, so
   * its worst case, retries included, is at most FAST_TOOL_MAX_TIMEOUT_SECONDS (the timeout is
   * FAST_TOOL_TIMEOUT_SECONDS unless set).
   */
  fast?: boolean;
}

/** A fast tool's timeout unless it sets one. */
export const FAST_TOOL_TIMEOUT_SECONDS = 5;
/** Below the workflow task's 10 s timeout: a longer batch would hold the run's signals past it. */
export const FAST_TOOL_MAX_TIMEOUT_SECONDS = 8;

export interface Tool {
  readonly name: string;
  readonly descriptor: ToolDescriptor;
  readonly parameters: z.ZodType;
  execute(args: unknown, context: ToolContext): unknown;
  /** Absent or false: calls run without a decision (unless the agent lists the tool in `needs_approval`). */
  readonly needsApproval?: NeedsApproval<unknown>;
  readonly retry?: ResolvedRetryPolicy;
  readonly taskQueue?: string;
  /** `defineTool({ idempotent })`: a call that outlived its timeout or an abort may simply be made again. */
  readonly idempotent?: boolean;
}

/** The longest a policy waits between attempts, all waits added up. */
function totalWaitMs(policy: ResolvedRetryPolicy): number {
  let total = 0;
  for (let attempt = 1; attempt < policy.maxAttempts; attempt += 1) total += retryDelayMs(policy, attempt);
  return total;
}

/** A fast tool runs inside a workflow task: its worst case, every attempt and wait, stays under the cap. */
function checkFast(definition: ToolDefinition<z.ZodType>, retry: ResolvedRetryPolicy | undefined): void {
  if (!definition.fast) return;
  if (definition.taskQueue)
    throw new ConfigurationError(
      `tool '${definition.name}': a fast tool runs on the workflow's worker, it cannot name a taskQueue`,
    );
  const timeout = definition.timeoutSeconds ?? FAST_TOOL_TIMEOUT_SECONDS;
  const worst = timeout * (retry?.maxAttempts ?? 1) + (retry ? totalWaitMs(retry) / 1000 : 0);
  if (worst > FAST_TOOL_MAX_TIMEOUT_SECONDS)
    throw new ConfigurationError(
      `tool '${definition.name}': a fast tool may take at most ${FAST_TOOL_MAX_TIMEOUT_SECONDS} s, every retry included (it runs inside a workflow task), not ${worst} s; lower timeoutSeconds or drop fast`,
    );
}

/** The JSON Schema of a tool's parameters, or the refusal naming the tool. */
function parametersSchema(definition: ToolDefinition<z.ZodType>): ToolDescriptor['parameters'] {
  try {
    return providerJsonSchema(definition.parameters);
  } catch (error) {
    throw new ConfigurationError(`tool '${definition.name}': parameters: ${(error as Error).message}`);
  }
}

export function defineTool<Parameters extends z.ZodType>(definition: ToolDefinition<Parameters>): Tool {
  const retry = definition.retry ? resolveRetry(definition.name, definition.retry) : undefined;
  checkFast(definition, retry);
  const timeoutSeconds = definition.timeoutSeconds ?? (definition.fast ? FAST_TOOL_TIMEOUT_SECONDS : undefined);
  return {
    name: definition.name,
    parameters: definition.parameters,
    descriptor: {
      name: definition.name,
      description: definition.description,
      parameters: parametersSchema(definition),
      best_practices: definition.bestPractices ?? [],
      ...(definition.promptInjection !== undefined ? { prompt_injection: definition.promptInjection } : {}),
      ...(timeoutSeconds !== undefined ? { timeout_seconds: timeoutSeconds } : {}),
      // The batch activity's own timeout must cover every attempt and wait.
      ...(retry ? { max_attempts: retry.maxAttempts, retry_wait_seconds: Math.ceil(totalWaitMs(retry) / 1000) } : {}),
      ...(definition.fast ? { fast: true } : {}),
    },
    execute: (args, context) => definition.execute(args as z.output<Parameters>, context),
    ...(definition.needsApproval !== undefined
      ? { needsApproval: definition.needsApproval as NeedsApproval<unknown> }
      : {}),
    ...(retry ? { retry } : {}),
    ...(definition.taskQueue ? { taskQueue: definition.taskQueue } : {}),
    ...(definition.idempotent ? { idempotent: true } : {}),
  };
}
