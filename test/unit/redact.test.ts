import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { REDACTED, SecretRedactor } from '../../src/activities/redact';
import { RedactingLogger } from '../../src/worker/redaction';

const key = 'sk-test-0123456789abcdefABCDEF';

describe('secret redaction', () => {
  const redactor = new SecretRedactor([key, undefined, 'short']);

  it('removes the configured key and key-shaped values, and nothing else', () => {
    expect(redactor.redact(`401: Incorrect API key provided: ${key}.`)).toBe(
      `401: Incorrect API key provided: ${REDACTED}.`,
    );
    expect(redactor.redact('other key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA here')).toBe(`other key ${REDACTED} here`);
    expect(redactor.redact('Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123')).toBe(`Authorization: ${REDACTED}`);
    expect(redactor.redact('google AIzaSyA1234567890abcdefghijklmnopqrstuv')).toBe(`google ${REDACTED}`);
    expect(redactor.redact('groq gsk_abcdefghijklmnopqrstuvwxyz')).toBe(`groq ${REDACTED}`);
    // Short configured values are ignored (they would redact ordinary words); so is ordinary text.
    expect(redactor.redact('a short sk-1 risk-free task; short words stay')).toBe(
      'a short sk-1 risk-free task; short words stay',
    );
  });

  it('keeps a failure’s type, retryability and retry delay, and redacts message, stack, details and cause', () => {
    const cause = ApplicationFailure.create({ message: `inner ${key}`, type: 'Inner' });
    const failure = ApplicationFailure.create({
      message: `outer ${key}`,
      type: 'ProviderRateLimited',
      nextRetryDelay: 1500,
      details: [{ echoed: key }],
      cause,
    });
    const redacted = redactor.redactError(failure) as ApplicationFailure;
    expect(redacted).toBeInstanceOf(ApplicationFailure);
    expect(redacted.type).toBe('ProviderRateLimited');
    expect(redacted.nonRetryable).toBe(false);
    expect(redacted.nextRetryDelay).toBe(1500);
    expect(
      JSON.stringify([
        redacted.message,
        redacted.stack,
        redacted.details,
        redacted.cause?.message,
        redacted.cause?.stack,
      ]),
    ).not.toContain(key);
    expect(redacted.message).toBe(`outer ${REDACTED}`);
    const plain = redactor.redactError(new TypeError(`fetch ${key}`)) as ApplicationFailure;
    expect([plain.type, plain.message]).toEqual(['TypeError', `fetch ${REDACTED}`]);
    const cancel = new CancelledFailure('shutdown');
    expect(redactor.redactError(cancel)).toBe(cancel);
  });

  it('removes the configured key from any returned value, deeply', () => {
    expect(redactor.containsSecret({ a: [{ b: `x${key}y` }] })).toBe(true);
    expect(redactor.redactValue({ a: [{ b: `x${key}y` }], n: 1 })).toEqual({ a: [{ b: `x${REDACTED}y` }], n: 1 });
    expect(new SecretRedactor([]).containsSecret({ a: key })).toBe(false);
  });

  it('redacts log lines and their metadata, errors included', () => {
    const lines: unknown[] = [];
    const logger = new RedactingLogger(
      { log: (...args: unknown[]) => lines.push(args), trace() {}, debug() {}, info() {}, warn() {}, error() {} },
      redactor,
    );
    logger.warn(`Activity failed with ${key}`, {
      error: new Error(`boom ${key}`),
      nested: { header: `Bearer ${key}` },
    });
    const text = JSON.stringify(lines, (_key, value: unknown) =>
      value instanceof Error ? { message: value.message, stack: value.stack } : value,
    );
    expect(text).not.toContain(key);
    expect(text).toContain(REDACTED);
  });
});

describe('redacting log metadata', () => {
  it('survives cycles in the object graph (a plugin or span context in a log line)', () => {
    const redactor = new SecretRedactor(['sk-secret-value']);
    const meta: Record<string, unknown> = { message: 'key sk-secret-value' };
    meta['self'] = meta;
    expect(redactor.redactValue(meta)).toEqual({
      message: expect.not.stringContaining('sk-secret-value'),
      self: '[circular]',
    });
  });
});
