import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import { digestText } from './digest';
import { TokenUsage } from './usage';
import { utf8Bytes } from './user-message';

/** The default of `notify.retry_initial_seconds`: the wait before the second attempt. */
const DEFAULT_NOTIFY_RETRY_INITIAL_SECONDS = 10;
/** How long a notification is tried again before it gives up: a day from its first attempt. */
export const NOTIFY_GIVE_UP_SECONDS = 24 * 60 * 60;
/** The longest wait between two attempts (the waits double from `retry_initial_seconds` up to this). */
export const NOTIFY_MAX_RETRY_INTERVAL_SECONDS = 60 * 60;
/** The most of the answer a notification carries (UTF-8 bytes); a longer one is cut, `answer_truncated` says so. */
export const NOTIFY_MAX_ANSWER_BYTES = 16 * 1024;
/** The most of a failed run's error message a notification carries. */
export const NOTIFY_MAX_ERROR_BYTES = 2 * 1024;

/**
 * `notify`: a call when a run ends. A run's own (run input, `patchloop run --notify-url`) wins over its
 * agent's. The secret is never in the run: `secret_env` names a variable of the worker's environment,
 * read when the call is made.
 */
export const NotifySettings = sharedSchema('runtime/notify#NotifySettings', () =>
  z.strictObject({
    /** Where the JSON body is POSTed (http or https). */
    // A pattern, not zod's url(): that needs `URL`, which the workflow sandbox does not have.
    url: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/[^\s/?#]+[^\s]*$/i, 'an http:// or https:// URL')
      .describe('Where the JSON body is POSTed when the run ends (http or https).'),
    /** The environment variable of the worker that holds the HMAC key of `Patchloop-Signature`. */
    secret_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .describe("The worker's environment variable holding the signing key (the key itself never enters the run)."),
    /** The wait before the second attempt; each next wait doubles, up to an hour, for a day in all. */
    retry_initial_seconds: z
      .number()
      .positive()
      .max(NOTIFY_MAX_RETRY_INTERVAL_SECONDS)
      .default(DEFAULT_NOTIFY_RETRY_INITIAL_SECONDS)
      .describe('The wait before the second attempt; the waits double up to an hour, for a day in all.'),
  }),
);
export type NotifySettings = z.infer<typeof NotifySettings>;
export type NotifySettingsInput = z.input<typeof NotifySettings>;

/**
 * The JSON body POSTed when a run ends (docs/notifications.md). Built by the ending run, so it rides in
 * the notifier's input: bounded (the answer and error cut to their limits) to stay far under Temporal's
 * payload limits. `links` is added by the worker that delivers it, when it knows them.
 */
export const NotificationBody = sharedSchema('runtime/notify#NotificationBody', () =>
  z.strictObject({
    /** The same on every attempt of this notification: a receiver keeps the first and ignores repeats. */
    delivery_id: z.string(),
    workflow_id: z.string(),
    /** The run (execution) that ended: the last of its continue-as-new chain. */
    run_id: z.string(),
    agent: z.string(),
    status: z.enum(['completed', 'aborted', 'budget_exhausted', 'failed']),
    /** The final answer (completed runs), cut to `NOTIFY_MAX_ANSWER_BYTES`; null otherwise. */
    answer: z.string().nullable(),
    answer_truncated: z.literal(true).optional(),
    abort_reason: z.string().optional(),
    /** A failed run's failure type and message. */
    error: z.strictObject({ type: z.string(), message: z.string() }).optional(),
    usage: TokenUsage.nullable(),
    /** When the run ended (ISO 8601, workflow time). */
    ended_at: z.string(),
    links: z.strictObject({ console: z.string().optional(), temporal_ui: z.string().optional() }).optional(),
  }),
);
export type NotificationBody = z.infer<typeof NotificationBody>;
export type NotifiedStatus = NotificationBody['status'];

/** What activity `deliverNotification` is asked: the body the run built, where, and the key's variable. */
export const NotifyDeliveryInput = sharedSchema('runtime/notify#NotifyDeliveryInput', () =>
  z.strictObject({ url: z.string(), secret_env: z.string(), body: NotificationBody }),
);
export type NotifyDeliveryInput = z.infer<typeof NotifyDeliveryInput>;

/** Input of workflow `notifyRunEnd`, the notifier an ending run starts: the delivery and its first wait. */
export const NotifierInput = sharedSchema('runtime/notify#NotifierInput', () =>
  NotifyDeliveryInput.extend({ retry_initial_seconds: z.number().positive() }),
);
export type NotifierInput = z.infer<typeof NotifierInput>;

/** A delivered notification (the notifier's result): when, after how many attempts, and the receiver's status. */
export interface NotifyDelivered {
  delivered_at: string;
  attempts: number;
  http_status: number;
}

/** What the ending run knows of itself, for its notification. */
export interface RunEnding {
  workflowId: string;
  firstRunId: string;
  runId: string;
  agent: string;
  status: NotifiedStatus;
  answer: string | null;
  abortReason?: string | undefined;
  error?: { type: string; message: string } | undefined;
  usage: TokenUsage | null;
  /** ISO 8601 (workflow time). */
  endedAt: string;
}

/** The body of a run's notification, its answer and error cut to their bounds. */
export function notificationBody(ending: RunEnding): NotificationBody {
  const answer = ending.answer === null ? null : cutToBytes(ending.answer, NOTIFY_MAX_ANSWER_BYTES);
  return {
    delivery_id: notificationDeliveryId(ending.workflowId, ending.firstRunId),
    workflow_id: ending.workflowId,
    run_id: ending.runId,
    agent: ending.agent,
    status: ending.status,
    answer,
    ...(answer !== null && answer !== ending.answer ? { answer_truncated: true as const } : {}),
    ...(ending.abortReason !== undefined
      ? { abort_reason: cutToBytes(ending.abortReason, NOTIFY_MAX_ERROR_BYTES) }
      : {}),
    ...(ending.error
      ? { error: { type: ending.error.type, message: cutToBytes(ending.error.message, NOTIFY_MAX_ERROR_BYTES) } }
      : {}),
    usage: ending.usage,
    ended_at: ending.endedAt,
  };
}

/**
 * The delivery id: one per run chain (its workflow id and first run id), so every attempt, and a
 * notifier started again for the same run, sends the same one. Hex, so it is a safe header value.
 */
function notificationDeliveryId(workflowId: string, firstRunId: string): string {
  return digestText(`${workflowId}\n${firstRunId}`).slice(0, 32);
}

/**
 * The notifier's workflow id: deterministic, so `show` finds it from the run, and with the chain's
 * first run id, so a run reusing a workflow id never meets the notifier of the run before it.
 */
export function notifierWorkflowId(workflowId: string, firstRunId: string): string {
  return `${workflowId}/notify/${firstRunId}`;
}

/** The longest prefix of `text` of at most `most` UTF-8 bytes, never splitting a character. */
export function cutToBytes(text: string, most: number): string {
  if (utf8Bytes(text) <= most) return text;
  // The longest prefix that fits, by bisection (a character takes 1 to 4 bytes).
  let end = 0;
  let high = Math.min(text.length, most);
  while (end < high) {
    const middle = Math.ceil((end + high) / 2);
    if (utf8Bytes(text.slice(0, middle)) <= most) end = middle;
    else high = middle - 1;
  }
  // A lone high surrogate at the cut would be half a character.
  if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
  return text.slice(0, end);
}

/** The host (and port) of a URL, without any user or password in it. */
export function hostOf(url: string): string {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(url)?.[1] ?? url;
  return authority.slice(authority.lastIndexOf('@') + 1);
}
