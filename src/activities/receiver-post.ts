import { Context } from '@temporalio/activity';
import { createHmac } from 'node:crypto';
import { failure, FailureType } from '../common';
import type { NotifyDelivered } from '../runtime';

/** One attempt's bound: the receiver answers (its status line and headers) within this, or the attempt fails. */
const RECEIVER_ATTEMPT_TIMEOUT_MS = 10_000;
/** The most of a receiver's answer kept for the error a failed attempt reports. */
const ANSWER_EXCERPT_BYTES = 200;
/** A `Retry-After` longer than this is taken as this (the retry policy's longest wait). */
const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * `Patchloop-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. A receiver
 * recomputes it over the raw body with the key it shares with the sender, and refuses an old `t` (a
 * replay).
 */
export function signatureHeader(secret: string, unixSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * One attempt of a delivery (the activity's own attempt): POSTs `body` with `headers`, signed with
 * `Patchloop-Signature` when a key is given, and classifies the outcome once, here, for every kind of
 * notification: a 2xx is delivered; no answer, a timeout, 408, 429 and 5xx are tried again
 * (`NotifyUnreachable`, after `Retry-After` when the receiver gives one); a 3xx or another 4xx refuses
 * this very body, which no retry changes (`NotifyRejected`). A redirect is not followed: it would send
 * the signed body elsewhere.
 */
export async function postToReceiver(request: {
  url: string;
  headers: Record<string, string>;
  body: string;
  signingKey?: string | undefined;
}): Promise<NotifyDelivered> {
  const context = Context.current();
  const attempt = context.info.attempt;
  const signal = AbortSignal.any([AbortSignal.timeout(RECEIVER_ATTEMPT_TIMEOUT_MS), context.cancellationSignal]);
  const signature: Record<string, string> = request.signingKey
    ? { 'patchloop-signature': signatureHeader(request.signingKey, Math.floor(Date.now() / 1000), request.body) }
    : {};
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: 'POST',
      headers: { ...request.headers, ...signature },
      body: request.body,
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    throw failure(FailureType.NotifyUnreachable, `no answer from the receiver: ${fetchProblem(error)}`, {
      retryable: true,
      details: [{ attempt }],
    });
  }
  if (response.status >= 200 && response.status < 300) {
    await response.body?.cancel().catch(() => undefined);
    return { delivered_at: new Date().toISOString(), attempts: attempt, http_status: response.status };
  }
  throw answerFailure(response, await answerExcerpt(response), attempt);
}

/** The failure of an attempt the receiver answered with something other than a 2xx. */
function answerFailure(response: Response, excerpt: string, attempt: number) {
  const status = response.status;
  const said = `the receiver answered HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`;
  if (status === 408 || status === 429 || status >= 500) {
    const delay = retryAfterMs(response.headers.get('retry-after'));
    return failure(FailureType.NotifyUnreachable, said, {
      retryable: true,
      details: [{ attempt }],
      ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
    });
  }
  return failure(FailureType.NotifyRejected, said, { details: [{ attempt }] });
}

/** `Retry-After` in seconds or as an HTTP date, bounded; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 1000), MAX_RETRY_AFTER_MS) : undefined;
}

/** Why a request got no answer: a timeout, a refused connection, ... */
function fetchProblem(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return `no answer within ${RECEIVER_ATTEMPT_TIMEOUT_MS / 1000} s`;
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/** The start of the receiver's answer (for the error an attempt reports); the rest is not read. */
async function answerExcerpt(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < ANSWER_EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.length;
    }
  } catch {
    // An answer cut short says what it said so far.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).subarray(0, ANSWER_EXCERPT_BYTES).toString('utf8');
  return text.replace(/\s+/g, ' ').trim();
}
