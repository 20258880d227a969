/**
 * Tools with side effects outside the worker, for `patchloop worker --tools` in crash tests: each call
 * tells the side-effect server (PATCHLOOP_TEST_EFFECTS_URL) what it did, with its idempotency key.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, RetryableToolError } from '../../src/tools/define-tool';

async function post(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(`${process.env['PATCHLOOP_TEST_EFFECTS_URL']}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

export const tools = [
  defineTool({
    name: 'charge',
    description: 'Charges a card (a side effect), then takes its time to confirm.',
    parameters: z.object({ label: z.string(), seconds: z.number().nonnegative() }),
    timeoutSeconds: 300,
    execute: async ({ label, seconds }, { idempotencyKey, signal }) => {
      const worker = process.env['PATCHLOOP_TEST_WORKER_NAME'] ?? 'test';
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'start' });
      await sleep(seconds * 1000, undefined, { signal });
      // The call is finished from here on: a second 'end' for one key means a finished call ran again.
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'end' });
      return `charged ${label}`;
    },
  }),
  defineTool({
    name: 'settle',
    description:
      'Settles a payment (a side effect), then waits up to `seconds` for its confirmation; asked to stop, it returns at once: the payment is settled.',
    parameters: z.object({ label: z.string(), seconds: z.number().nonnegative() }),
    timeoutSeconds: 300,
    execute: async ({ label, seconds }, { idempotencyKey, signal }) => {
      const worker = process.env['PATCHLOOP_TEST_WORKER_NAME'] ?? 'test';
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'start' });
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'end' });
      await sleep(seconds * 1000, undefined, { signal }).catch(() => undefined);
      return `settled ${label}`;
    },
  }),
  defineTool({
    name: 'flaky',
    description: 'Fails twice with a retryable error, then succeeds.',
    parameters: z.object({ label: z.string() }),
    retry: { maxAttempts: 5, initialInterval: '100ms', backoff: 2 },
    execute: async ({ label }, { idempotencyKey }) => {
      const { attempt } = await post('/attempt', { key: idempotencyKey });
      if (Number(attempt) < 3) throw new RetryableToolError(`${label}: attempt ${String(attempt)} failed`);
      return `${label} done on attempt ${String(attempt)}`;
    },
  }),
  defineTool({
    name: 'stubborn',
    description: 'Always fails with a retryable error.',
    parameters: z.object({ label: z.string() }),
    retry: { maxAttempts: 2, initialInterval: 50 },
    execute: async ({ label }, { idempotencyKey }) => {
      const { attempt } = await post('/attempt', { key: idempotencyKey });
      throw new RetryableToolError(`${label}: attempt ${String(attempt)} failed`);
    },
  }),
  defineTool({
    name: 'note',
    description: 'Writes a note (a side effect), a fast tool: it runs as a local activity.',
    parameters: z.object({ label: z.string(), ms: z.number().int().nonnegative().max(4000) }),
    fast: true,
    execute: async ({ label, ms }, { idempotencyKey, signal }) => {
      const worker = process.env['PATCHLOOP_TEST_WORKER_NAME'] ?? 'test';
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'start' });
      await sleep(ms, undefined, { signal });
      await post('/effect', { label, key: idempotencyKey, worker, phase: 'end' });
      return `noted ${label}`;
    },
  }),
];
