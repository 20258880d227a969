import { z } from 'zod';
import { JsonValue } from '../context';
import { sharedSchema } from '../context/shared-schema';

/** The longest one wait may last by default: a week. */
const DEFAULT_MAX_WAIT_SECONDS = 7 * 24 * 3600;

/** An event's name, as `waits.events` lists it and `deliver_event` names it. */
const EventName = sharedSchema('runtime/wait-settings#EventName', () =>
  z.string().regex(/^[a-zA-Z0-9_.:-]{1,128}$/, 'letters, digits, _ . : and - (at most 128)'),
);

/**
 * `waits` of an agent definition (docs/agents-in-time.md): whether its model may wait, for how long at
 * most, and for which events. This file holds the settings and the shapes of events, which the carried
 * state uses too; the tools themselves are in `waits.ts`.
 */
export const WaitSettings = sharedSchema('runtime/wait-settings#WaitSettings', () =>
  z.strictObject({
    /** The longest one `sleep` or `wait_for_event` may last (seconds); a longer one gets an error result. */
    max_seconds: z.number().positive().default(DEFAULT_MAX_WAIT_SECONDS),
    /** Event names `wait_for_event` may wait for (and `deliver_event` accepts); none: `sleep` only. */
    events: z.array(EventName).default([]),
  }),
);
export type WaitSettings = z.infer<typeof WaitSettings>;

/** The most JSON an event's payload may hold: it becomes a tool result the model reads. */
export const MAX_EVENT_PAYLOAD_BYTES = 64 * 1024;
/** Events no wait has taken yet that a run keeps (and carries across continue-as-new). */
export const MAX_INBOX_EVENTS = 100;
/** Idempotency keys of delivered events a run remembers (the newest). */
export const MAX_REMEMBERED_EVENT_KEYS = 1000;
const MAX_EVENT_KEY_CHARS = 200;

/** What another service sends with the `deliver_event` update (or `patchloop event`). */
export const EventDelivery = sharedSchema('runtime/wait-settings#EventDelivery', () =>
  z.strictObject({
    name: EventName,
    /** Any JSON: the waiting call's result. */
    payload: JsonValue.default(null),
    /** An idempotency key: the same key delivered twice to a run applies once. */
    key: z.string().min(1).max(MAX_EVENT_KEY_CHARS).optional(),
  }),
);
export type EventDelivery = z.infer<typeof EventDelivery>;

/** An event the run holds until a wait takes it (carried across continue-as-new). */
export const HeldEvent = sharedSchema('runtime/wait-settings#HeldEvent', () =>
  z.strictObject({
    name: z.string(),
    payload: JsonValue,
    key: z.string().optional(),
    received_at: z.string(),
  }),
);
export type HeldEvent = z.infer<typeof HeldEvent>;
