import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { classifyAttempt, classifyProviderError, emptyReply, retryAfterMs } from '../../src/activities/provider-errors';

const apiError = (
  status: number,
  message = 'boom',
  headers: Record<string, string> = {},
  code?: string,
  type?: string,
) =>
  OpenAI.APIError.generate(
    status,
    { error: { message, ...(code ? { code } : {}), ...(type ? { type } : {}) } },
    message,
    new Headers(headers),
  );

describe('provider error classification', () => {
  it.each([
    [429, 'ProviderRateLimited', false],
    [500, 'ProviderUnavailable', false],
    [503, 'ProviderUnavailable', false],
    [408, 'ProviderUnavailable', false],
    [409, 'ProviderUnavailable', false],
    [400, 'ProviderRejected', true],
    [401, 'ProviderAuthFailed', true],
    [403, 'ProviderAuthFailed', true],
    [404, 'ProviderRejected', true],
    [422, 'ProviderRejected', true],
  ])('status %i is %s (non-retryable: %s)', (status, type, nonRetryable) => {
    const failure = classifyProviderError(apiError(status));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(nonRetryable);
    expect(failure.message).toContain(`(${status})`);
  });

  it('recognizes a context overflow and honours retry-after on 429', () => {
    expect(classifyProviderError(apiError(400, 'too long', {}, 'context_length_exceeded')).type).toBe('ContextTooLong');
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after': '3' })).nextRetryDelay).toBe(3000);
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after-ms': '250' })).nextRetryDelay).toBe(250);
  });

  it('treats connection failures and broken streams as retryable', () => {
    const failure = classifyProviderError(new OpenAI.APIConnectionError({ message: 'Connection error.' }));
    expect(failure.type).toBe('ProviderUnavailable');
    expect(failure.nonRetryable).toBe(false);
    expect(classifyProviderError(new TypeError('terminated')).type).toBe('ProviderUnavailable');
  });

  it('fails at once on exhausted quota, which no retry can fix', () => {
    for (const failure of [
      classifyProviderError(apiError(429, 'You exceeded your current quota', {}, 'insufficient_quota')),
      classifyProviderError(apiError(429, 'quota', {}, undefined, 'insufficient_quota')),
    ]) {
      expect(failure.type).toBe('ProviderQuotaExceeded');
      expect(failure.nonRetryable).toBe(true);
    }
  });

  it('follows the provider’s x-should-retry verdict either way', () => {
    const stop = classifyProviderError(apiError(500, 'broken', { 'x-should-retry': 'false' }));
    expect([stop.type, stop.nonRetryable]).toEqual(['ProviderUnavailable', true]);
    expect(stop.message).toContain('x-should-retry: false');
    const retry = classifyProviderError(apiError(400, 'busy', { 'x-should-retry': 'true', 'retry-after-ms': '300' }));
    expect([retry.type, retry.nonRetryable, retry.nextRetryDelay]).toEqual(['ProviderUnavailable', false, 300]);
    // Quota exhaustion stays final even if a proxy says to retry.
    expect(
      classifyProviderError(apiError(429, 'quota', { 'x-should-retry': 'true' }, 'insufficient_quota')).nonRetryable,
    ).toBe(true);
  });

  it('classifies undecodable data as a retryable malformed reply', () => {
    const failure = classifyProviderError(new SyntaxError('Unexpected token t in JSON'));
    expect([failure.type, failure.nonRetryable]).toEqual(['ProviderMalformedReply', false]);
  });

  it('parses retry-after as seconds or an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after': '2' })).toBe(2000);
    expect(retryAfterMs({ 'retry-after': new Date(10_000).toUTCString() }, 4_000)).toBe(6000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });

  it('ignores empty, zero, negative and huge delays, which would hot-loop or stall the run', () => {
    const cases: Array<Record<string, string>> = [
      { 'retry-after': '' },
      { 'retry-after': '0' },
      { 'retry-after-ms': '' },
      { 'retry-after-ms': '0' },
      { 'retry-after': '-3' },
      { 'retry-after': '86400' },
    ];
    for (const headers of cases) {
      expect([headers, retryAfterMs(headers)]).toEqual([headers, undefined]);
    }
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after': '0' })).nextRetryDelay).toBeUndefined();
  });

  it('classifies errors the provider sends inside a stream by their code and type', () => {
    const streamed = (error: Record<string, unknown>) => new OpenAI.APIError(undefined, error, undefined, undefined);
    const cases: Array<[Record<string, unknown>, string, boolean]> = [
      [{ message: 'quota', type: 'insufficient_quota', code: 'insufficient_quota' }, 'ProviderQuotaExceeded', true],
      [{ message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' }, 'ProviderAuthFailed', true],
      [{ message: 'too long', type: 'invalid_request_error', code: 'context_length_exceeded' }, 'ContextTooLong', true],
      [{ message: 'flagged', type: 'invalid_request_error', code: 'content_filter' }, 'ProviderRejected', true],
      [{ message: 'overloaded', type: 'server_error' }, 'ProviderUnavailable', false],
    ];
    for (const [error, type, nonRetryable] of cases) {
      const failure = classifyProviderError(streamed(error));
      expect([error.message, failure.type, failure.nonRetryable]).toEqual([error.message, type, nonRetryable]);
    }
  });
});

describe('failures retrying cannot fix', () => {
  /** The attempts of one call: each classified with what the previous one recorded. */
  const attempts = (errors: unknown[]) => {
    let previous: ReturnType<typeof classifyAttempt>['record'] | undefined;
    return errors.map((error) => {
      const { failure, record } = classifyAttempt(error, previous);
      previous = record;
      return [failure.type, failure.nonRetryable];
    });
  };

  it('a 500 whose body is a validation error is a rejection at once, with the server message', () => {
    const body = "7 validation errors:\n  {'type': 'string_type', 'msg': 'Input should be a valid string'}";
    const { failure } = classifyAttempt(apiError(500, body), undefined);
    expect([failure.type, failure.nonRetryable]).toEqual(['ProviderRejected', true]);
    expect(failure.message).toContain('Input should be a valid string');
  });

  it('the same 500 five times in a row ends the call; a different one in between starts the count again', () => {
    const same = () => apiError(500, "'dict object' has no attribute 'content'");
    expect(attempts([same(), same(), same(), same(), same()])).toEqual([
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderRejected', true],
    ]);
    expect(attempts([same(), same(), same(), same(), apiError(500, 'other'), same()]).at(-1)).toEqual([
      'ProviderUnavailable',
      false,
    ]);
  });

  it('gateways, overloads and errors the provider asks to retry are outages however often they repeat', () => {
    const outages = [
      ...[501, 502, 503, 504, 520, 522, 529].map((status) => () => apiError(status, 'busy')),
      () => apiError(500, 'busy', { 'x-should-retry': 'true' }),
      () => apiError(500, 'busy', { 'retry-after': '2' }),
    ];
    for (const outage of outages)
      expect(attempts(Array.from({ length: 8 }, outage)).at(-1)).toEqual(['ProviderUnavailable', false]);
  });

  it('an empty reply that says why (length, content_filter) fails at once, naming the reason', () => {
    for (const [reason, says] of [
      ['length', 'completion limit'],
      ['content_filter', 'content filter'],
    ] as const) {
      const { failure } = classifyAttempt(emptyReply(reason), undefined);
      expect([failure.type, failure.nonRetryable]).toEqual(['ProviderRejected', true]);
      expect(failure.message).toContain(says);
    }
  });

  it('an empty reply is retried, and the third in a row fails as ProviderEmptyReply', () => {
    expect(attempts([emptyReply(), emptyReply(), emptyReply()])).toEqual([
      ['ProviderStreamIncomplete', false],
      ['ProviderStreamIncomplete', false],
      ['ProviderEmptyReply', true],
    ]);
  });
});
