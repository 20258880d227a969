import { describe, expect, it } from 'vitest';
import { finishedRepeats, type SideEffect } from '../support/side-effects';

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
    expect(finishedRepeats(effects, [{ worker: 'w1', at: 1300 }], 1000)).toEqual({ inWindow: 1, outside: 2 });
  });

  it('does not credit a death of another worker, or one before the end', () => {
    const effects = [end('a', 'w1', 1000), end('a', 'w2', 4000)];
    expect(finishedRepeats(effects, [{ worker: 'w2', at: 1100 }], 1000)).toEqual({ inWindow: 0, outside: 1 });
    expect(finishedRepeats(effects, [{ worker: 'w1', at: 900 }], 1000)).toEqual({ inWindow: 0, outside: 1 });
  });
});
