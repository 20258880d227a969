import { z } from 'zod';
import type { JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';
import type { ToolDescriptor } from './agent';
import { providerJsonSchema } from './json-schemas';
import type { UnprocessedEvent } from './run-input';
import { utf8Bytes } from './user-message';
import {
  EventDelivery,
  MAX_EVENT_PAYLOAD_BYTES,
  MAX_INBOX_EVENTS,
  MAX_REMEMBERED_EVENT_KEYS,
  type HeldEvent,
  type WaitSettings,
} from './wait-settings';

/**
 * Durable waits (docs/agents-in-time.md): two tools the workflow carries out itself, with a timer and
 * no activity. `sleep` waits for a time; `wait_for_event` for an event another service delivers with
 * the `deliver_event` update. Pure: the registry builds the descriptors, the workflow reads the
 * arguments and the results' text from here.
 */

export const SLEEP_TOOL = 'sleep';
export const WAIT_FOR_EVENT_TOOL = 'wait_for_event';
export type WaitTool = typeof SLEEP_TOOL | typeof WAIT_FOR_EVENT_TOOL;

/** The answer of `deliver_event`. */
export interface EventDelivered {
  accepted: true;
  /** The key was delivered before: nothing changed. */
  duplicate: boolean;
  /** A wait for this name took it at once; otherwise the run holds it for the next wait. */
  taken_by_wait: boolean;
  /** Events the run holds for later waits (this one included when it waits there). */
  held: number;
}

/** Why a delivery cannot be accepted by a run whose agent waits as `waits` says (null: it can). */
export function deliveryProblem(
  delivery: unknown,
  waits: WaitSettings | null,
  held: number,
): { problem: string } | { delivery: EventDelivery } {
  const parsed = EventDelivery.safeParse(delivery);
  if (!parsed.success)
    return {
      problem: `not an event: ${parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'event'}: ${issue.message}`).join('; ')} (expected {"name": string, "payload": JSON, "key"?: string})`,
    };
  const event = parsed.data;
  const bytes = utf8Bytes(JSON.stringify(event.payload));
  if (bytes > MAX_EVENT_PAYLOAD_BYTES)
    return { problem: `the event's payload is ${bytes} bytes of JSON, over the limit of ${MAX_EVENT_PAYLOAD_BYTES}` };
  if (!waits || waits.events.length === 0)
    return {
      problem: `event '${event.name}' refused: this run's agent waits for no events (its "waits.events" is empty)`,
    };
  if (!waits.events.includes(event.name))
    return {
      problem: `event '${event.name}' refused: this run's agent waits only for ${waits.events.map((name) => `'${name}'`).join(', ')}`,
    };
  if (held >= MAX_INBOX_EVENTS)
    return { problem: `the run holds ${held} events no wait has taken (at most ${MAX_INBOX_EVENTS}): deliver later` };
  return { delivery: event };
}

const SleepArguments = sharedSchema('runtime/waits#SleepArguments', () =>
  z.strictObject({
    seconds: z.number().positive().optional().describe('How long to wait, in seconds. Give this or until.'),
    until: z
      .string()
      .optional()
      .describe('When to wake, an ISO 8601 time with its offset (e.g. 2026-12-07T09:00:00Z).'),
    reason: z.string().max(500).describe('Why you wait: shown to the people watching the run.'),
  }),
);

const EventArguments = (events: readonly string[]) =>
  z.strictObject({
    name: z.enum(events as [string, ...string[]]).describe('The event to wait for.'),
    timeout_seconds: z.number().positive().describe('The longest to wait; the result says when it timed out.'),
  });

/** The wait tools an agent with `waits` offers the model: `sleep`, and `wait_for_event` when it names events. */
export function waitToolDescriptors(waits: WaitSettings | undefined): ToolDescriptor[] {
  if (!waits) return [];
  const most = `at most ${waits.max_seconds} seconds`;
  const sleep: ToolDescriptor = {
    name: SLEEP_TOOL,
    description: `Wait, without doing anything, for some seconds or until a time (${most}); costs nothing while it waits. A message from the user wakes you early; the result says what woke you and when.`,
    parameters: providerJsonSchema(SleepArguments),
    best_practices: ['Sleep between checks of something slow (a deploy, a build) instead of checking in a loop.'],
    durable_wait: SLEEP_TOOL,
  };
  if (waits.events.length === 0) return [sleep];
  const event: ToolDescriptor = {
    name: WAIT_FOR_EVENT_TOOL,
    description: `Wait until another service delivers an event (${waits.events.join(', ')}), ${most}; its payload is the result. An event delivered before you wait is kept for you.`,
    parameters: providerJsonSchema(EventArguments(waits.events)),
    best_practices: ['Give a timeout you can act on: the result says when it passed without the event.'],
    durable_wait: WAIT_FOR_EVENT_TOOL,
  };
  return [sleep, event];
}

/** A wait the workflow carries out: until when (epoch ms), and for which event. */
export type WaitPlan =
  | { tool: typeof SLEEP_TOOL; wake_at_ms: number; reason: string }
  | { tool: typeof WAIT_FOR_EVENT_TOOL; wake_at_ms: number; event: string };

/** A wait call's plan from its arguments at `nowMs`, or why it cannot wait. */
export function waitPlan(
  tool: WaitTool,
  args: JsonObject,
  nowMs: number,
  waits: WaitSettings,
): WaitPlan | { problem: string } {
  const issues = (error: z.ZodError) =>
    error.issues.map((issue) => `${issue.path.map(String).join('.') || 'arguments'}: ${issue.message}`).join('; ');
  const most = waits.max_seconds * 1000;
  const tooLong = (ms: number) =>
    ms > most
      ? { problem: `a wait may last at most ${waits.max_seconds} seconds (this one: ${Math.ceil(ms / 1000)})` }
      : null;
  if (tool === WAIT_FOR_EVENT_TOOL) {
    const parsed = EventArguments(waits.events.length > 0 ? waits.events : ['']).safeParse(args);
    if (!parsed.success) return { problem: issues(parsed.error) };
    const ms = parsed.data.timeout_seconds * 1000;
    return tooLong(ms) ?? { tool, wake_at_ms: nowMs + ms, event: parsed.data.name };
  }
  const parsed = SleepArguments.safeParse(args);
  if (!parsed.success) return { problem: issues(parsed.error) };
  const { seconds, until, reason } = parsed.data;
  if ((seconds === undefined) === (until === undefined)) return { problem: 'give seconds or until (one of them)' };
  const at = until === undefined ? nowMs + seconds! * 1000 : Date.parse(until);
  if (Number.isNaN(at)) return { problem: `until: '${until}' is not an ISO 8601 time` };
  return tooLong(at - nowMs) ?? { tool, wake_at_ms: Math.max(at, nowMs), reason };
}

/** What ended a wait. */
export type WaitOutcome = { woke: 'time' } | { woke: 'event'; event: HeldEvent } | { woke: 'user_message' };

/** When a wait ended (ISO times, given by the workflow's clock) and how long it took. */
export interface WaitTimes {
  waited_ms: number;
  now: string;
  wake_at: string;
}

/** The wait call's result as the model reads it (JSON text). */
export function waitResultText(plan: WaitPlan, outcome: WaitOutcome, clock: WaitTimes): string {
  const times = { waited_seconds: Math.round(clock.waited_ms / 100) / 10, now: clock.now };
  if (outcome.woke === 'event')
    return JSON.stringify({
      event: outcome.event.name,
      payload: outcome.event.payload,
      ...(outcome.event.key !== undefined ? { key: outcome.event.key } : {}),
      received_at: outcome.event.received_at,
      ...times,
    });
  if (outcome.woke === 'user_message')
    return JSON.stringify({
      woke: 'user_message',
      note: 'A message from the user arrived before the wait ended; read it and decide whether to wait again.',
      wake_at: clock.wake_at,
      ...times,
    });
  return JSON.stringify(
    plan.tool === WAIT_FOR_EVENT_TOOL
      ? { timed_out: true, event: plan.event, note: `no '${plan.event}' event came in time`, ...times }
      : { woke: 'time', wake_at: clock.wake_at, ...times },
  );
}

/** Takes the oldest held event of this name out of the run's inbox (undefined: none). */
export function takeHeldEvent(held: HeldEvent[], name: string): HeldEvent | undefined {
  const index = held.findIndex((event) => event.name === name);
  return index < 0 ? undefined : held.splice(index, 1)[0];
}

/** What a result says of the events no wait took: which, when, and how large (not their payloads). */
export function unprocessedEvents(held: readonly HeldEvent[]): UnprocessedEvent[] {
  return held.map((event) => ({
    name: event.name,
    ...(event.key !== undefined ? { key: event.key } : {}),
    received_at: event.received_at,
    payload_bytes: utf8Bytes(JSON.stringify(event.payload)),
  }));
}

/** The keys a run remembers after this delivery: the newest `MAX_REMEMBERED_EVENT_KEYS`. */
export function rememberedKeys(keys: readonly string[], key: string | undefined): string[] {
  return key === undefined ? [...keys] : [...keys, key].slice(-MAX_REMEMBERED_EVENT_KEYS);
}
