import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { attemptSignal, raceAbort } from '../../src/activities/attempt-signal';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Whether what the reference points to is collected once nothing else holds it. */
async function collected(reference: WeakRef<object>): Promise<boolean> {
  for (let round = 0; round < 5; round += 1) {
    // A WeakRef keeps its target until the job that made or read it ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    if (reference.deref() === undefined) return true;
  }
  return false;
}

const HOUR_MS = 3_600_000;

describe('a tool attempt’s signal', () => {
  afterEach(() => vi.useRealTimers());

  it('aborts with the batch’s reason when the batch aborts', () => {
    const batch = new AbortController();
    const under = attemptSignal(batch.signal, HOUR_MS);
    batch.abort(new Error('user abort'));
    expect(under.signal.aborted).toBe(true);
    expect((under.signal.reason as Error).message).toBe('user abort');
    expect(under.timedOut()).toBe(false);
    under.release();
  });

  it('starts aborted under a batch that already is', () => {
    const batch = new AbortController();
    batch.abort('gone');
    const under = attemptSignal(batch.signal, HOUR_MS);
    expect(under.signal.aborted).toBe(true);
    expect(under.signal.reason).toBe('gone');
    under.release();
  });

  it('aborts with a TimeoutError at its timeout, and says so', () => {
    vi.useFakeTimers();
    const batch = new AbortController();
    const under = attemptSignal(batch.signal, 5_000);
    vi.advanceTimersByTime(4_999);
    expect(under.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(under.signal.aborted).toBe(true);
    expect((under.signal.reason as DOMException).name).toBe('TimeoutError');
    expect(under.timedOut()).toBe('total');
    // The batch aborting later changes nothing.
    batch.abort('later');
    expect((under.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('with an idle timeout: progress starts it anew, silence ends it, and the total ends it regardless', () => {
    vi.useFakeTimers();
    const batch = new AbortController();
    const quiet = attemptSignal(batch.signal, 10_000, 2_000);
    vi.advanceTimersByTime(1_999);
    quiet.progressed();
    // Past the first idle deadline: the progress moved it.
    vi.advanceTimersByTime(1_999);
    expect(quiet.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(quiet.signal.aborted).toBe(true);
    expect(quiet.timedOut()).toBe('idle');
    quiet.release();

    const busy = attemptSignal(batch.signal, 10_000, 2_000);
    for (let elapsed = 0; elapsed < 9_000; elapsed += 1_000) {
      vi.advanceTimersByTime(1_000);
      busy.progressed();
    }
    expect(busy.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1_000);
    expect(busy.timedOut()).toBe('total');
    busy.progressed();
    expect(busy.timedOut()).toBe('total');
    busy.release();
  });

  it('asks the tool to stop at the batch’s abort, but is waited for until its grace has passed', () => {
    vi.useFakeTimers();
    const batch = new AbortController();
    const under = attemptSignal(batch.signal, HOUR_MS, undefined, 200);
    batch.abort(new Error('worker shutdown'));
    expect(under.signal.aborted).toBe(true);
    expect(under.waitUntil.aborted).toBe(false);
    vi.advanceTimersByTime(199);
    expect(under.waitUntil.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect((under.waitUntil.reason as Error).message).toBe('worker shutdown');
    under.release();
  });

  it('stops waiting at once at a timeout (no grace), and without a grace at the batch’s abort', () => {
    vi.useFakeTimers();
    const timed = attemptSignal(new AbortController().signal, 5_000, undefined, 200);
    vi.advanceTimersByTime(5_000);
    expect(timed.waitUntil.aborted).toBe(true);
    expect(timed.timedOut()).toBe('total');
    timed.release();
    const batch = new AbortController();
    const plain = attemptSignal(batch.signal, HOUR_MS);
    batch.abort('now');
    expect(plain.waitUntil.aborted).toBe(true);
    plain.release();
  });

  it('released during its grace, it never stops waiting (the grace timer goes with it)', () => {
    vi.useFakeTimers();
    const batch = new AbortController();
    const under = attemptSignal(batch.signal, HOUR_MS, undefined, 200);
    batch.abort('stop');
    under.release();
    vi.advanceTimersByTime(1_000);
    expect(under.waitUntil.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('once released, neither its timer nor the batch aborts it, and the batch holds no listener', () => {
    vi.useFakeTimers();
    const batch = new AbortController();
    const under = attemptSignal(batch.signal, 5_000);
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(1);
    under.release();
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(0);
    vi.advanceTimersByTime(10_000);
    batch.abort('later');
    expect(under.signal.aborted).toBe(false);
    expect(under.timedOut()).toBe(false);
  });

  it('is garbage once its attempt settles, even with an hour left on its timeout', async () => {
    const batch = new AbortController();
    const reference = await (async () => {
      const under = attemptSignal(batch.signal, HOUR_MS);
      // What a tool call does with it: race its work against it (one abort listener while it runs).
      const work = { input: 'x'.repeat(100_000) };
      await raceAbort(Promise.resolve(work), under.signal).finally(under.release);
      return new WeakRef(under.signal);
    })();
    expect(await collected(reference)).toBe(true);
    // The batch's signal, which lives on, kept nothing of the attempt.
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(0);
  });

  it('(why: the same race under AbortSignal.any and AbortSignal.timeout is kept for the whole timeout)', async () => {
    const batch = new AbortController();
    const timeout = AbortSignal.timeout(HOUR_MS);
    const reference = await (async () => {
      const signal = AbortSignal.any([batch.signal, timeout]);
      signal.addEventListener('abort', () => undefined, { once: true });
      await Promise.resolve();
      return new WeakRef(signal);
    })();
    expect(await collected(reference)).toBe(false);
    // Aborting is what lets Node drop it.
    batch.abort('done');
    expect(await collected(reference)).toBe(true);
  });
});

describe('racing a promise against a signal', () => {
  it('settles with the promise and leaves no listener behind, whether it resolves or rejects', async () => {
    const controller = new AbortController();
    await expect(raceAbort(Promise.resolve(7), controller.signal)).resolves.toBe(7);
    await expect(raceAbort(Promise.reject(new Error('tool failed')), controller.signal)).rejects.toThrow('tool failed');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with the signal’s reason when it aborts first, and drops the late result', async () => {
    const controller = new AbortController();
    let finish!: (value: string) => void;
    const slow = new Promise<string>((resolve) => (finish = resolve));
    const raced = raceAbort(slow, controller.signal);
    controller.abort(new Error('aborted'));
    await expect(raced).rejects.toThrow('aborted');
    finish('late');
    await expect(slow).resolves.toBe('late');
  });

  it('rejects at once under a signal already aborted, without an unhandled rejection from the promise', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already'));
    await expect(raceAbort(Promise.reject(new Error('ignored')), controller.signal)).rejects.toThrow('already');
  });
});
