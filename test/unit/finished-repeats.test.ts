import { describe, expect, it } from 'vitest';
import { finishedRepeats, type SideEffect } from '../../support/side-effects';

const end = (key: string, worker: string, at: number): SideEffect => ({ label: key, key, worker, phase: 'end', at });

describe('finishedRepeats', () => {
  it('counts a repeat as in the window only when its worker was stopped soon after the first end', () => {
    const effects = [
      end('a', 'w1', 1000),
      end('a', 'w2', 5000), // w1 died 300 ms after a's end: the checkpoint window
      end('b', 'w1', 2000),
      end('b', 'w2', 6000), // no death of w1 follows b's end: its checkpoint should have been kept
      end('c', 'w2', 3000),
      end('c', 'w2', 7000), // w2 was never stopped
      end('d', 'w1', 1200), // finished once
    ];
    expect(finishedRepeats(effects, [{ worker: 'w1', at: 1300 }], 1000)).toEqual({
      inWindow: 1,
      inOutage: 0,
      outside: 2,
    });
  });

  it('counts a call that finished after its worker was signalled, before it exited, as in flight at the stop', () => {
    const effects = [
      end('a', 'w1', 1100),
      end('a', 'w2', 5000), // SIGTERM at 1000, exited at 1400: a finished on the way out
      end('b', 'w1', 1500),
      end('b', 'w2', 6000), // after the exit (another process of that name, or a clock gone wrong)
    ];
    expect(finishedRepeats(effects, [{ worker: 'w1', at: 1000, exited: 1400 }], 1000)).toEqual({
      inWindow: 1,
      inOutage: 0,
      outside: 1,
    });
  });

  it('counts a repeat as in an outage only when the call finished while the server could not record its checkpoint', () => {
    const effects = [
      end('a', 'w1', 10_000),
      end('a', 'w2', 20_000), // finished while the server was down (9,500 to 12,000)
      end('b', 'w1', 8_800),
      end('b', 'w2', 20_000), // 700 ms before it went down: the checkpoint may not have left the worker
      end('c', 'w1', 13_500),
      end('c', 'w2', 20_000), // after it came back, within the heartbeat timeout (2 s): timed out on restart
      end('d', 'w1', 8_000),
      end('d', 'w2', 20_000), // long before the outage: its checkpoint should have been kept
      end('e', 'w1', 14_500),
      end('e', 'w2', 20_000), // after the heartbeat timeout past the restart: likewise
    ];
    const outages = [{ from: 9_500, to: 12_000 }];
    expect(finishedRepeats(effects, [], 1000, outages, 2000)).toEqual({ inWindow: 0, inOutage: 3, outside: 2 });
    expect(finishedRepeats(effects, [], 1000)).toEqual({ inWindow: 0, inOutage: 0, outside: 5 });
    // An outage shorter than the heartbeat timeout (less the checkpoint window) times nothing out.
    expect(finishedRepeats(effects, [], 1000, [{ from: 9_500, to: 10_400 }], 2000)).toEqual({
      inWindow: 0,
      inOutage: 0,
      outside: 5,
    });
  });

  it('does not credit a death of another worker, or one before the end', () => {
    const effects = [end('a', 'w1', 1000), end('a', 'w2', 4000)];
    const none = { inWindow: 0, inOutage: 0, outside: 1 };
    expect(finishedRepeats(effects, [{ worker: 'w2', at: 1100 }], 1000)).toEqual(none);
    expect(finishedRepeats(effects, [{ worker: 'w1', at: 900 }], 1000)).toEqual(none);
  });
});
