import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { carriedFailure, failure, FailureType } from '../common';
import {
  DEFAULT_LLM_SERVER_ERROR_SECONDS,
  parseContextOverflow,
  saysContextTooLong,
  type AttemptFailure,
} from '../runtime';
import { readErrorBody, readErrorValue, type ErrorBody, type ErrorReading } from './provider-error-body';

/**
 * Classifies provider failures once, at the activity edge. Unavailability (429, 5xx, 408, 409, network
 * errors, broken streams) retries, after the provider's `retry-after` when it gives one; a request the
 * provider rejects, bad credentials and exhausted quota fail at once with a readable message. The
 * provider's `x-should-retry` header overrides the status either way. Headers never go into the failure.
 */
export function classifyProviderError(error: unknown, body?: ErrorBody): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof OpenAI.APIError && error.status !== undefined)
    return withRetryHint(classifyStatus(error, statusErrorReading(error, body)), error.headers);
  if (error instanceof OpenAI.APIError) return classifyStreamedError(error);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SyntaxError)
    return failure(FailureType.ProviderMalformedReply, `the provider sent data that is not JSON: ${message}`, {
      retryable: true,
    });
  return failure(FailureType.ProviderUnavailable, `provider unreachable or the connection broke: ${message}`, {
    retryable: true,
  });
}

/** A reply that ended before it was complete; retried like any unavailability. */
export function incompleteReply(what: string): ApplicationFailure {
  return failure(FailureType.ProviderStreamIncomplete, `the provider's reply is incomplete: ${what}`, {
    retryable: true,
  });
}

/**
 * A "successful" reply with no text, no tool calls and no refusal (a proxy that turned an upstream error
 * into an empty `stop`): not an answer. Retried; the same empty reply again and again ends the call. One
 * that says why it is empty fails at once: `length` (the completion limit was spent before any text,
 * on reasoning say: the same request spends it again) or `content_filter`.
 */
export function emptyReply(finishReason: string | null = null): ApplicationFailure {
  if (finishReason === 'length')
    return failure(
      FailureType.ProviderRejected,
      "the model's reply is empty: it reached its completion limit (finish_reason length) before any text; raise max_tokens or max_completion_tokens",
    );
  if (finishReason === 'content_filter')
    return failure(
      FailureType.ProviderRejected,
      "the model's reply is empty: the provider's content filter withheld it",
    );
  return incompleteReply('the reply is empty (no content, no tool calls, no refusal)');
}

/**
 * How many attempts in a row with the same answer end a call. A 500 needs five (with the backoff's
 * 1, 2, 4 and 8 s between them, at least 15 s of the same error: a short outage passes); an empty reply
 * three (a server that cannot answer at all answers nothing at once). Answers count as the same when
 * they differ only in their volatile parts (`withoutVolatileParts`).
 */
const SAME_FAILURE_LIMITS = { serverError: 5, emptyReply: 3 } as const;

/** What `classifyAttempt` needs beside the error. */
export interface AttemptContext {
  /** The answer's raw body, when it was an HTTP error (`BodyObserver.errorBody`). */
  body?: ErrorBody | undefined;
  /** How long HTTP 500 answers without progress may go on (the agent's `llm_server_error_seconds`). */
  serverErrorSeconds?: number | undefined;
  /** The time of this failure, epoch milliseconds (tests set it). */
  now?: number;
}

/**
 * One failed attempt, classified, and what its heartbeat records for the next attempt. A failure that
 * may be deterministic (an HTTP 500 the provider did not ask to retry, or an empty reply) and that came
 * back with the same message `SAME_FAILURE_LIMITS` times in a row ends the call: retrying for the whole
 * retry budget cannot change the server's mind. A 5xx whose body is a request validation error ends it
 * at once. Gateways (502 to 504), overloads (529), Cloudflare's 52x and a `retry-after` or
 * `x-should-retry: true` are outages, however often they repeat. And a 500 whose body changes on every
 * try still ends the call once 500s have gone on for `serverErrorSeconds` without progress
 * (`serverErrorStreak`).
 */
export function classifyAttempt(
  error: unknown,
  previous: AttemptFailure | undefined,
  context: AttemptContext = {},
): { failure: ApplicationFailure; record: AttemptFailure } {
  const classified = classifyProviderError(error, context.body);
  const type = classified.type ?? 'Error';
  const serverError = !classified.nonRetryable && isServerError(error);
  const empty = classified.message === emptyReply().message;
  const repeatable = serverError || empty;
  const same =
    previous?.type === type && withoutVolatileParts(previous.message) === withoutVolatileParts(classified.message);
  const repeats = repeatable && same ? (previous.repeats ?? 1) + 1 : 1;
  const now = context.now ?? Date.now();
  const since = serverErrorStreak(error, serverError, previous, now);
  const record = {
    type,
    message: classified.message,
    ...(repeatable ? { repeats } : {}),
    ...(since ? { server_errors_since: since } : {}),
  };
  const limitSeconds = context.serverErrorSeconds ?? DEFAULT_LLM_SERVER_ERROR_SECONDS;
  let ended: ApplicationFailure | undefined;
  if (repeats >= (empty ? SAME_FAILURE_LIMITS.emptyReply : SAME_FAILURE_LIMITS.serverError))
    ended = failure(
      empty ? FailureType.ProviderEmptyReply : FailureType.ProviderRejected,
      `${classified.message} (the same answer ${repeats} times in a row: retrying cannot help)`,
    );
  else if (serverError && since && now - Date.parse(since) >= limitSeconds * 1000)
    ended = failure(
      FailureType.ProviderUnavailable,
      `${classified.message} (nothing but 5xx answers and failed connections for ${limitSeconds} s or more, the limit llm_server_error_seconds: retrying stopped)`,
    );
  if (!ended) return { failure: classified, record };
  return { failure: ended, record: { ...record, type: ended.type!, message: ended.message } };
}

/**
 * Since when (ISO time) this call's attempts have failed without progress, counted from its first HTTP
 * 500 that may be deterministic. Other 5xx answers and failed connections keep the count going (they
 * are no progress, but only such a 500 ends the call); anything else (a reply, even one that broke off,
 * a 429, a 4xx) starts it again.
 */
function serverErrorStreak(
  error: unknown,
  serverError: boolean,
  previous: AttemptFailure | undefined,
  now: number,
): string | undefined {
  const noProgress =
    error instanceof OpenAI.APIConnectionError ||
    (error instanceof OpenAI.APIError && error.status !== undefined && error.status >= 500);
  if (!noProgress) return undefined;
  return previous?.server_errors_since ?? (serverError ? new Date(now).toISOString() : undefined);
}

/**
 * The message with its volatile parts masked: every word with a digit in it (request ids, timestamps,
 * counts) and every long word (random ids). Two answers that differ only there are the same answer.
 */
export function withoutVolatileParts(message: string): string {
  return message.replace(/[\w-]*\d[\w-]*|[\w-]{24,}/g, '#');
}

/** An HTTP 500 the provider did not ask to retry: it may be the server's answer to this very request. */
function isServerError(error: unknown): boolean {
  return (
    error instanceof OpenAI.APIError &&
    error.status === 500 &&
    error.headers?.get('x-should-retry') !== 'true' &&
    retryAfterMs(error.headers) === undefined
  );
}

/** What an HTTP error answer says: its raw body when the phase kept it, else what the client parsed of it. */
function statusErrorReading(error: InstanceType<typeof OpenAI.APIError>, body: ErrorBody | undefined): ErrorReading {
  if (body) return readErrorBody(body);
  return readErrorValue(error.error ?? error.message);
}

/**
 * An error the provider sent inside a stream (`data: {"error": ...}`) has no HTTP status: its code and
 * type say what it is. Unknown ones count as unavailability.
 */
function classifyStreamedError(error: InstanceType<typeof OpenAI.APIError>): ApplicationFailure {
  const reading = readErrorValue(error.error ?? error.message);
  const kind = `${reading.code ?? error.code ?? ''} ${reading.type ?? error.type ?? ''}`;
  const detail = reading.message;
  if (isQuotaExhausted(error, reading))
    return failure(FailureType.ProviderQuotaExceeded, `the provider account has no quota left: ${detail}`);
  if (/context_length_exceeded/.test(kind)) return contextTooLong(detail, '');
  if (/invalid_api_key|authentication|permission/.test(kind))
    return failure(FailureType.ProviderAuthFailed, `provider refused the credentials: ${detail}`);
  if (/invalid_request|content_filter|content_policy/.test(kind))
    return failure(FailureType.ProviderRejected, `provider rejected the request: ${detail}`);
  return failure(FailureType.ProviderUnavailable, `provider error in the stream: ${detail}`, { retryable: true });
}

function classifyStatus(error: InstanceType<typeof OpenAI.APIError>, reading: ErrorReading): ApplicationFailure {
  const status = error.status!;
  const detail = reading.message;
  if (status === 429 && isQuotaExhausted(error, reading)) {
    return failure(
      FailureType.ProviderQuotaExceeded,
      `the provider account has no quota left (429 insufficient_quota): ${detail}. Check the plan and billing of the key.`,
    );
  }
  if (status === 429) {
    const delay = retryAfterMs(error.headers);
    return failure(FailureType.ProviderRateLimited, `provider rate limit (429): ${detail}`, {
      retryable: true,
      nextRetryDelay: delay,
    });
  }
  if (status >= 500 && reading.validation)
    return failure(
      FailureType.ProviderRejected,
      `provider rejected the request (${status}, a validation error: retrying cannot help): ${detail}. If this server is not OpenAI's, name its kind in the agent's provider.profile or PATCHLOOP_PROVIDER_PROFILE (llama-cpp, vllm, ollama, litellm, generic).`,
    );
  if (status >= 500 || status === 408 || status === 409) {
    const delay = retryAfterMs(error.headers);
    return failure(FailureType.ProviderUnavailable, `provider error (${status}): ${detail}`, {
      retryable: true,
      nextRetryDelay: delay,
    });
  }
  if (status === 401 || status === 403) {
    return failure(
      FailureType.ProviderAuthFailed,
      `provider refused the credentials (${status}): ${detail}. Check OPENAI_API_KEY and OPENAI_BASE_URL.`,
    );
  }
  const overflow = error.code === 'context_length_exceeded' || reading.code === 'context_length_exceeded';
  if ((status === 400 || status === 413) && (overflow || saysContextTooLong(detail)))
    return contextTooLong(detail, ` (${status})`);
  const hint =
    status === 404 ? " Check the model name (PATCHLOOP_MODEL or the agent's model) and OPENAI_BASE_URL." : '';
  return failure(FailureType.ProviderRejected, `provider rejected the request (${status}): ${detail}.${hint}`);
}

/**
 * The request did not fit the model's window. The sizes the provider stated ride in the failure's
 * details (`ContextOverflow`): the run compacts to fit them and tries the call again.
 */
function contextTooLong(detail: string, status: string): ApplicationFailure {
  return failure(FailureType.ContextTooLong, `the request is longer than the model's context${status}: ${detail}`, {
    details: [parseContextOverflow(detail)],
  });
}

/** `x-should-retry: true|false` is the provider's own verdict, as the openai client itself honours it. */
function withRetryHint(classified: ApplicationFailure, headers: Headers | undefined): ApplicationFailure {
  const hint = headers?.get('x-should-retry');
  if (hint === 'false' && !classified.nonRetryable) {
    return carriedFailure(
      classified.type,
      `${classified.message} (the provider said not to retry: x-should-retry: false)`,
    );
  }
  if (hint === 'true' && classified.nonRetryable && classified.type !== FailureType.ProviderQuotaExceeded) {
    // Typed as unavailability: the workflow's retry policy never retries the rejection types.
    const delay = retryAfterMs(headers);
    return failure(FailureType.ProviderUnavailable, `${classified.message} (retried: x-should-retry: true)`, {
      retryable: true,
      nextRetryDelay: delay,
    });
  }
  return classified;
}

function isQuotaExhausted(error: InstanceType<typeof OpenAI.APIError>, reading: ErrorReading): boolean {
  return [error.code, reading.code, reading.type].includes('insufficient_quota');
}

/** The longest provider-requested pause honoured; longer ones fall back to the retry policy's backoff. */
const MAX_RETRY_AFTER_MS = 10 * 60 * 1000;

/**
 * `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. Only a positive delay up to 10
 * minutes counts: an empty or zero header must not turn the backoff into a hot loop.
 */
export function retryAfterMs(
  headers: Headers | Record<string, string> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const read = (name: string) => {
    const value = (headers instanceof Headers ? headers.get(name) : headers[name])?.trim();
    return value === '' ? undefined : value;
  };
  const usable = (ms: number) => (Number.isFinite(ms) && ms > 0 && ms <= MAX_RETRY_AFTER_MS ? ms : undefined);
  const milliseconds = read('retry-after-ms');
  if (milliseconds !== undefined) return usable(Number(milliseconds));
  const value = read('retry-after');
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!Number.isNaN(seconds)) return usable(seconds * 1000);
  return usable(Date.parse(value) - now);
}
