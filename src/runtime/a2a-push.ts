import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import { digestText } from './digest';

/** The most push-notification configs one task holds (running watchers and ended ones not deleted). */
export const A2A_PUSH_MAX_CONFIGS = 10;
/** The longest receiver URL. */
const A2A_PUSH_MAX_URL_CHARS = 2048;
/** The longest token (`X-A2A-Notification-Token`, and the key of `Patchloop-Signature`). */
const A2A_PUSH_MAX_TOKEN_CHARS = 512;
/** The longest `authentication.credentials`. */
const A2A_PUSH_MAX_CREDENTIALS_CHARS = 4096;
/** How many deliveries a watcher keeps in its record (the newest; `delivered` counts them all). */
export const A2A_PUSH_KEPT_DELIVERIES = 20;

/** What a header value may hold: visible ASCII and spaces, nothing that ends a header line. */
const HEADER_VALUE = /^[\x20-\x7e]*$/;

/**
 * One push-notification config of a task, as the watcher that delivers it keeps it (and the gateway
 * reads it back for Get and List). Its limits are checked where a caller sends it (the gateway), and
 * again here, so a watcher never starts with a config that could not be sent.
 */
export const A2aPushTarget = sharedSchema('runtime/a2a-push#A2aPushTarget', () =>
  z.strictObject({
    /** The config's id: unique on its task; part of the watcher's workflow id. */
    id: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, "1 to 100 letters, digits, '.', '_' or '-'"),
    // A pattern, not zod's url(): that needs `URL`, which the workflow sandbox does not have.
    url: z
      .string()
      .max(A2A_PUSH_MAX_URL_CHARS)
      .regex(/^https?:\/\/[^\s/?#]+[^\s]*$/i, 'an http:// or https:// URL'),
    token: z.string().max(A2A_PUSH_MAX_TOKEN_CHARS).regex(HEADER_VALUE, 'visible ASCII characters'),
    authentication: z
      .strictObject({
        scheme: z.string().regex(/^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,63}$/, 'an HTTP authentication scheme'),
        credentials: z
          .string()
          .min(1)
          .max(A2A_PUSH_MAX_CREDENTIALS_CHARS)
          .regex(HEADER_VALUE, 'visible ASCII characters'),
      })
      .nullable(),
  }),
);
export type A2aPushTarget = z.infer<typeof A2aPushTarget>;

/** One delivered change, as the watcher records it. */
export const A2aPushDelivery = sharedSchema('runtime/a2a-push#A2aPushDelivery', () =>
  z.strictObject({
    /** The task state it told of (`TASK_STATE_WORKING`, ...). */
    state: z.string(),
    delivery_id: z.string(),
    attempts: z.number(),
    http_status: z.number(),
    delivered_at: z.string(),
  }),
);
export type A2aPushDelivery = z.infer<typeof A2aPushDelivery>;

/**
 * Input of workflow `a2aPushWatcher` (`<taskId>/a2a-push/<configId>`): the task, the config, and where
 * it stands: `after` is the run event the last change came from (-1: not read yet, the watcher then
 * starts from the run's newest event), `state` the task state the receiver last learned of (or the one
 * the task was in when the config was created). Continue-as-new carries the same fields on.
 */
export const A2aPushWatcherInput = sharedSchema('runtime/a2a-push#A2aPushWatcherInput', () =>
  z.strictObject({
    task_id: z.string().min(1),
    context_id: z.string().min(1),
    config: A2aPushTarget,
    after: z.number().int().min(-1).default(-1),
    state: z.string(),
    deliveries: z.array(A2aPushDelivery).max(A2A_PUSH_KEPT_DELIVERIES).default([]),
    delivered: z.number().int().min(0).default(0),
  }),
);
export type A2aPushWatcherInput = z.infer<typeof A2aPushWatcherInput>;
export type A2aPushWatcherInputWire = z.input<typeof A2aPushWatcherInput>;

/** What the watcher's wait for the task's next change asks (activity `awaitTaskChange`). */
export interface A2aTaskChangeInput {
  task_id: string;
  context_id: string;
  after: number;
  state: string;
  /** The longest this attempt waits before it answers `none` (the watcher then asks again). */
  wait_seconds: number;
}

/**
 * The task's next change: `change` with the StreamResponse to POST (JSON text, bounded), the event it
 * came from and whether the state is final (the watcher's last); `none` when nothing changed within the wait (`after` moved past events that changed no
 * state); `ended` when the task ended in the very state the receiver knows (nothing is left to tell).
 */
export type A2aTaskChange =
  | { kind: 'change'; after: number; state: string; final: boolean; body: string }
  | { kind: 'none'; after: number; state: string }
  | { kind: 'ended' };

/** What activity `deliverA2aPush` is asked: one change's body, to one config's receiver. */
export interface A2aPushDeliveryInput {
  target: A2aPushTarget;
  delivery_id: string;
  body: string;
}

/** The watcher's result: the deliveries it made (the newest kept), and how many in all. */
export interface A2aPushWatcherResult {
  delivered: number;
  deliveries: A2aPushDelivery[];
}

/** The watcher of a task's config: its workflow id (deterministic, so Get, List and Delete find it). */
export function a2aPushWatcherId(taskId: string, configId: string): string {
  return `${a2aPushWatcherPrefix(taskId)}${configId}`;
}

/** What every watcher id of a task begins with. */
export function a2aPushWatcherPrefix(taskId: string): string {
  return `${taskId}/a2a-push/`;
}

/**
 * A delivery's id: the same on every attempt of one change of one config (a receiver keeps the first
 * and ignores repeats), another for every other. Hex, so it is a safe header value.
 */
export function a2aPushDeliveryId(taskId: string, configId: string, after: number): string {
  return digestText(`${taskId}\n${configId}\n${after}`).slice(0, 32);
}
