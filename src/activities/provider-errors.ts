import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';

/**
 * Classifies provider failures once, at the activity edge: rate limits, server errors and network
 * failures retry (with the provider's retry-after when given); requests the provider rejects fail at
 * once with a readable message. Headers and keys never go into the failure.
 */
export function classifyProviderError(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof OpenAI.APIError && error.status !== undefined) return classifyStatus(error);
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({ type: 'ProviderUnavailable', message: `provider unreachable or the stream broke: ${message}` });
}

function classifyStatus(error: InstanceType<typeof OpenAI.APIError>): ApplicationFailure {
  const status = error.status!;
  const detail = providerMessage(error);
  if (status === 429) {
    const delay = retryAfterMs(error.headers);
    return ApplicationFailure.create({
      type: 'ProviderRateLimited',
      message: `provider rate limit (429): ${detail}`,
      ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
    });
  }
  if (status >= 500 || status === 408 || status === 409) {
    return ApplicationFailure.create({ type: 'ProviderUnavailable', message: `provider error (${status}): ${detail}` });
  }
  if (status === 401 || status === 403) {
    return ApplicationFailure.nonRetryable(`provider refused the credentials (${status}): ${detail}. Check OPENAI_API_KEY and OPENAI_BASE_URL.`, 'ProviderAuthFailed');
  }
  if (status === 400 && (error.code === 'context_length_exceeded' || /context length|maximum context/i.test(detail))) {
    return ApplicationFailure.nonRetryable(`the request is longer than the model's context (400): ${detail}`, 'ContextTooLong');
  }
  const hint = status === 404 ? ' Check the model name (PATCHLOOP_MODEL or the agent\'s model) and OPENAI_BASE_URL.' : '';
  return ApplicationFailure.nonRetryable(`provider rejected the request (${status}): ${detail}.${hint}`, 'ProviderRejected');
}

function providerMessage(error: InstanceType<typeof OpenAI.APIError>): string {
  const body = error.error as { message?: unknown } | undefined;
  return typeof body?.message === 'string' ? body.message : error.message;
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const read = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name]) ?? undefined;
  const milliseconds = Number(read('retry-after-ms'));
  if (Number.isFinite(milliseconds) && milliseconds >= 0 && read('retry-after-ms') !== undefined) return milliseconds;
  const value = read('retry-after');
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
