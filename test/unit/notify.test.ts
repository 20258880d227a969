import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/activities/receiver-post';
import {
  AgentDefinition,
  AgentRunInput,
  NotificationBody,
  notificationBody,
  notifierWorkflowId,
  NotifySettings,
  type RunEnding,
} from '../../src/runtime';
import { NOTIFY_MAX_ANSWER_BYTES, NOTIFY_MAX_ERROR_BYTES } from '../../src/runtime/notify';

const ending: RunEnding = {
  workflowId: 'run-1',
  firstRunId: 'first-run',
  runId: 'last-run',
  agent: 'assistant',
  status: 'completed',
  answer: 'It is sunny.',
  usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
  endedAt: '2026-12-05T10:00:00.000Z',
};

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('the signature of a notification', () => {
  it('is t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, as openssl computes it', () => {
    // printf '%s' '1700000000.{"delivery_id":"abc"}' | openssl dgst -sha256 -hmac whsec_test
    expect(signatureHeader('whsec_test', 1700000000, '{"delivery_id":"abc"}')).toBe(
      't=1700000000,v1=15ff199661ed3f4fb7e682f0f1b7b651411d42856d0630e4d953916403a68a30',
    );
  });

  it('changes with the body, the time and the key', () => {
    const base = signatureHeader('k', 1, 'body');
    expect(signatureHeader('k', 1, 'body ')).not.toBe(base);
    expect(signatureHeader('k', 2, 'body')).not.toBe(base);
    expect(signatureHeader('k2', 1, 'body')).not.toBe(base);
  });
});

describe('the checks docs/notifications.md shows', () => {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'notifications.md'), 'utf8');
  const block = (language: string) => new RegExp(`\`\`\`${language}\n([\\s\\S]*?)\`\`\``).exec(page)![1]!;

  it('the Node one accepts what the worker signs, and refuses another key, another body and an old time', () => {
    const verify = new Function('require', `${block('js')}\nreturn verify;`)(createRequire(__filename)) as (
      secret: string,
      header: string,
      body: Buffer | string,
    ) => boolean;
    const body = JSON.stringify({ delivery_id: 'abc', answer: 'déjà vu' });
    const now = Math.floor(Date.now() / 1000);
    expect(verify('key', signatureHeader('key', now, body), Buffer.from(body))).toBe(true);
    expect(verify('other', signatureHeader('key', now, body), Buffer.from(body))).toBe(false);
    expect(verify('key', signatureHeader('key', now, body), Buffer.from(`${body} `))).toBe(false);
    expect(verify('key', signatureHeader('key', now - 301, body), Buffer.from(body))).toBe(false);
    expect(verify('key', 'v1=00', Buffer.from(body))).toBe(false);
  });

  it('the Python one is the one the Python receiver of the end-to-end test checks every delivery with', () => {
    const receiver = readFileSync(join(__dirname, '..', 'support', 'notify_receiver.py'), 'utf8');
    expect(receiver).toContain(block('python'));
  });
});

describe('the body of a notification', () => {
  it('names the run, how it ended, its answer and usage; the delivery id is the same for every run of the chain', () => {
    const body = notificationBody(ending);
    expect(body).toEqual({
      delivery_id: body.delivery_id,
      workflow_id: 'run-1',
      run_id: 'last-run',
      agent: 'assistant',
      status: 'completed',
      answer: 'It is sunny.',
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
      ended_at: '2026-12-05T10:00:00.000Z',
    });
    expect(body.delivery_id).toMatch(/^[0-9a-f]{32}$/);
    expect(notificationBody({ ...ending, runId: 'a-later-run' }).delivery_id).toBe(body.delivery_id);
    expect(notificationBody({ ...ending, firstRunId: 'another-chain' }).delivery_id).not.toBe(body.delivery_id);
    expect(NotificationBody.parse(body)).toEqual(body);
  });

  it('cuts a long answer and a long error to their bounds, never inside a character', () => {
    const long = notificationBody({ ...ending, answer: 'é'.repeat(NOTIFY_MAX_ANSWER_BYTES) });
    expect(long.answer_truncated).toBe(true);
    expect(bytes(long.answer!)).toBe(NOTIFY_MAX_ANSWER_BYTES);
    const emoji = notificationBody({ ...ending, answer: `a${'😀'.repeat(NOTIFY_MAX_ANSWER_BYTES)}` });
    expect(bytes(emoji.answer!)).toBeLessThanOrEqual(NOTIFY_MAX_ANSWER_BYTES);
    expect(emoji.answer).toBe(`a${'😀'.repeat((NOTIFY_MAX_ANSWER_BYTES - 1) >> 2)}`);
    const failed = notificationBody({
      ...ending,
      status: 'failed',
      answer: null,
      error: { type: 'ProviderAuthFailed', message: 'x'.repeat(10_000) },
    });
    expect(failed.answer).toBeNull();
    expect(failed.answer_truncated).toBeUndefined();
    expect(failed.error).toEqual({ type: 'ProviderAuthFailed', message: 'x'.repeat(NOTIFY_MAX_ERROR_BYTES) });
    // The whole body stays far under Temporal's payload limits.
    expect(bytes(JSON.stringify(long))).toBeLessThan(NOTIFY_MAX_ANSWER_BYTES + 2048);
  });

  it('an aborted run says why', () => {
    const body = notificationBody({ ...ending, status: 'aborted', answer: null, abortReason: 'stop' });
    expect([body.status, body.answer, body.abort_reason]).toEqual(['aborted', null, 'stop']);
  });

  it('its notifier has an id derived from the run, per chain', () => {
    expect(notifierWorkflowId('run-1', 'first-run')).toBe('run-1/notify/first-run');
  });
});

describe('notify settings', () => {
  it('a run, an agent and the CLI name url and secret_env; the first wait defaults to 10 s', () => {
    const settings = { url: 'https://example.com/hook', secret_env: 'HOOK_KEY' };
    expect(NotifySettings.parse(settings)).toEqual({ ...settings, retry_initial_seconds: 10 });
    expect(AgentRunInput.parse({ agent: 'a', input: 'x', notify: settings }).notify?.url).toBe(settings.url);
    expect(AgentDefinition.parse({ name: 'a', instructions: '', notify: settings }).notify?.secret_env).toBe(
      'HOOK_KEY',
    );
    expect(AgentDefinition.parse({ name: 'a', instructions: '' }).notify).toBeUndefined();
  });

  it('refuses a URL that is not http(s), a variable name that is not one, and the key itself', () => {
    expect(NotifySettings.safeParse({ url: 'ftp://example.com', secret_env: 'K' }).success).toBe(false);
    expect(NotifySettings.safeParse({ url: 'not a url', secret_env: 'K' }).success).toBe(false);
    expect(NotifySettings.safeParse({ url: 'http://example.com', secret_env: 'whsec key!' }).success).toBe(false);
    expect(NotifySettings.safeParse({ url: 'http://example.com', secret_env: 'K', secret: 'x' }).success).toBe(false);
  });
});
