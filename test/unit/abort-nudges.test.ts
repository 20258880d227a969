import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ABORT_NUDGE_DELAYS_MS, nudgeAfterAbort, nudgeableHeartbeat } from '../../src/activities/abort-nudges';

describe('abort nudges', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("heartbeats each running activity of the aborted run's workflow at each delay, and no other", () => {
    const beats: string[] = [];
    const stops = [
      nudgeableHeartbeat('run-a', () => beats.push('a1')),
      nudgeableHeartbeat('run-a', () => beats.push('a2')),
      nudgeableHeartbeat('run-b', () => beats.push('b')),
    ];
    nudgeAfterAbort('run-a');
    // Not at once: the cancel has not reached the server when the sink runs.
    expect(beats).toEqual([]);
    vi.advanceTimersByTime(ABORT_NUDGE_DELAYS_MS.at(-1)!);
    expect(beats).toEqual(ABORT_NUDGE_DELAYS_MS.flatMap(() => ['a1', 'a2']));
    for (const stop of stops) stop();
  });

  it('skips an activity that stopped heartbeating meanwhile, and forgets a workflow with none left', () => {
    const beats: string[] = [];
    const stop = nudgeableHeartbeat('run-c', () => beats.push('c'));
    nudgeAfterAbort('run-c');
    vi.advanceTimersByTime(ABORT_NUDGE_DELAYS_MS[0]!);
    expect(beats).toEqual(['c']);
    stop();
    vi.advanceTimersByTime(ABORT_NUDGE_DELAYS_MS.at(-1)!);
    expect(beats).toEqual(['c']);
    // A workflow with nothing running here schedules nothing.
    nudgeAfterAbort('run-c');
    expect(vi.getTimerCount()).toBe(0);
  });
});
