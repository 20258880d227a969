import { describe, expect, it } from 'vitest';
import {
  deliveryProblem,
  EventDelivery,
  MAX_INBOX_EVENTS,
  rememberedKeys,
  takeHeldEvent,
  waitPlan,
  waitResultText,
  waitToolDescriptors,
  WaitSettings,
  type HeldEvent,
} from '../../src/runtime';
import { z } from 'zod';
import { AgentRegistry } from '../../src/agents/registry';
import { defineTool } from '../../src/tools/define-tool';

const NOW = Date.parse('2026-12-06T12:00:00.000Z');
const waits = WaitSettings.parse({ max_seconds: 3600, events: ['build', 'deploy.done'] });

describe('durable waits (pure)', () => {
  it('offers sleep, and wait_for_event only with event names; each descriptor says it is a durable wait', () => {
    expect(waitToolDescriptors(undefined)).toEqual([]);
    expect(waitToolDescriptors(WaitSettings.parse({})).map((tool) => [tool.name, tool.durable_wait])).toEqual([
      ['sleep', 'sleep'],
    ]);
    const [, event] = waitToolDescriptors(waits);
    expect(event!.durable_wait).toBe('wait_for_event');
    expect((event!.parameters['properties'] as Record<string, { enum?: string[] }>)['name']!.enum).toEqual([
      'build',
      'deploy.done',
    ]);
  });

  it('plans a sleep by seconds or until, refuses both, neither, a bad time and one past max_seconds', () => {
    expect(waitPlan('sleep', { seconds: 30, reason: 'deploy' }, NOW, waits)).toEqual({
      tool: 'sleep',
      wake_at_ms: NOW + 30_000,
      reason: 'deploy',
    });
    expect(waitPlan('sleep', { until: '2026-12-06T12:10:00Z', reason: 'r' }, NOW, waits)).toEqual({
      tool: 'sleep',
      wake_at_ms: NOW + 600_000,
      reason: 'r',
    });
    // A time already past wakes at once.
    expect(waitPlan('sleep', { until: '2026-12-06T11:00:00Z', reason: 'r' }, NOW, waits)).toMatchObject({
      wake_at_ms: NOW,
    });
    expect(waitPlan('sleep', { seconds: 1, until: '2026-12-06T12:10:00Z', reason: 'r' }, NOW, waits)).toEqual({
      problem: 'give seconds or until (one of them)',
    });
    expect(waitPlan('sleep', { reason: 'r' }, NOW, waits)).toEqual({ problem: 'give seconds or until (one of them)' });
    expect(waitPlan('sleep', { until: 'tomorrow', reason: 'r' }, NOW, waits)).toEqual({
      problem: "until: 'tomorrow' is not an ISO 8601 time",
    });
    expect(waitPlan('sleep', { seconds: 7200, reason: 'r' }, NOW, waits)).toEqual({
      problem: 'a wait may last at most 3600 seconds (this one: 7200)',
    });
    expect(waitPlan('sleep', { seconds: 5 }, NOW, waits)).toMatchObject({ problem: expect.stringContaining('reason') });
  });

  it('plans an event wait for a listed name only', () => {
    expect(waitPlan('wait_for_event', { name: 'build', timeout_seconds: 60 }, NOW, waits)).toEqual({
      tool: 'wait_for_event',
      wake_at_ms: NOW + 60_000,
      event: 'build',
    });
    expect(waitPlan('wait_for_event', { name: 'other', timeout_seconds: 60 }, NOW, waits)).toMatchObject({
      problem: expect.stringContaining('name'),
    });
  });

  it('refuses a delivery the run cannot take, with the reason; a duplicate key is the caller of rememberedKeys', () => {
    expect(deliveryProblem({ name: 'build', payload: { ok: true } }, waits, 0)).toEqual({
      delivery: { name: 'build', payload: { ok: true } },
    });
    expect(deliveryProblem({ name: 'nope' }, waits, 0)).toEqual({
      problem: "event 'nope' refused: this run's agent waits only for 'build', 'deploy.done'",
    });
    expect(deliveryProblem({ name: 'build' }, WaitSettings.parse({}), 0)).toEqual({
      problem: `event 'build' refused: this run's agent waits for no events (its "waits.events" is empty)`,
    });
    expect(deliveryProblem({ name: 'build' }, null, 0)).toMatchObject({
      problem: expect.stringContaining('no events'),
    });
    expect(deliveryProblem({ name: 'build', payload: 'x'.repeat(70_000) }, waits, 0)).toEqual({
      problem: "the event's payload is 70002 bytes of JSON, over the limit of 65536",
    });
    expect(deliveryProblem({ name: 'build' }, waits, MAX_INBOX_EVENTS)).toMatchObject({
      problem: expect.stringContaining('at most 100'),
    });
    expect(deliveryProblem({ payload: 1 }, waits, 0)).toMatchObject({
      problem: expect.stringMatching(/^not an event: name/),
    });
    expect(EventDelivery.parse({ name: 'build' })).toEqual({ name: 'build', payload: null });
    expect(rememberedKeys(['a'], undefined)).toEqual(['a']);
    expect(
      rememberedKeys(
        Array.from({ length: 1000 }, (_, index) => `k${index}`),
        'new',
      ),
    ).toHaveLength(1000);
    expect(
      rememberedKeys(
        Array.from({ length: 1000 }, (_, index) => `k${index}`),
        'new',
      ).at(-1),
    ).toBe('new');
  });

  it('takes the oldest held event of a name, once', () => {
    const held: HeldEvent[] = [
      { name: 'build', payload: 1, received_at: 'a' },
      { name: 'deploy.done', payload: 2, received_at: 'b' },
      { name: 'build', payload: 3, received_at: 'c' },
    ];
    expect(takeHeldEvent(held, 'build')?.payload).toBe(1);
    expect(takeHeldEvent(held, 'build')?.payload).toBe(3);
    expect(takeHeldEvent(held, 'build')).toBeUndefined();
    expect(held).toHaveLength(1);
  });

  it("words each outcome for the model: the time, the event's payload, a timeout, a user message", () => {
    const clock = { waited_ms: 30_040, now: '2026-12-06T12:00:30.040Z', wake_at: '2026-12-06T12:00:30.000Z' };
    const sleep = { tool: 'sleep' as const, wake_at_ms: NOW + 30_000, reason: 'r' };
    const event = { tool: 'wait_for_event' as const, wake_at_ms: NOW + 30_000, event: 'build' };
    expect(JSON.parse(waitResultText(sleep, { woke: 'time' }, clock))).toEqual({
      woke: 'time',
      wake_at: clock.wake_at,
      waited_seconds: 30,
      now: clock.now,
    });
    expect(JSON.parse(waitResultText(event, { woke: 'time' }, clock))).toMatchObject({
      timed_out: true,
      event: 'build',
    });
    expect(
      JSON.parse(
        waitResultText(
          event,
          { woke: 'event', event: { name: 'build', payload: { green: true }, key: 'k', received_at: 'then' } },
          clock,
        ),
      ),
    ).toEqual({
      event: 'build',
      payload: { green: true },
      key: 'k',
      received_at: 'then',
      waited_seconds: 30,
      now: clock.now,
    });
    expect(JSON.parse(waitResultText(sleep, { woke: 'user_message' }, clock))).toMatchObject({ woke: 'user_message' });
  });

  it('a worker refuses an agent whose own tool is named like a wait tool; the spec lists the wait tools', () => {
    const sleepTool = defineTool({ name: 'sleep', description: 's', parameters: z.object({}), execute: () => 1 });
    expect(
      () => new AgentRegistry([sleepTool], [{ name: 'a', instructions: 'x', tools: ['sleep'], waits: {} }]),
    ).toThrow(/sleep/);
    const spec = new AgentRegistry([], [{ name: 'a', instructions: 'x', waits: { events: ['build'] } }]).describe(
      'a',
      'm',
    );
    expect(spec.tools).toEqual(['sleep', 'wait_for_event']);
    expect(spec.waits).toEqual({ max_seconds: 604800, events: ['build'] });
  });
});
