/**
 * The abort signal one tool attempt runs under, and a race against it that lets go when it settles.
 *
 * Why not `AbortSignal.any([batch, AbortSignal.timeout(ms)])`: Node keeps a composite or timeout signal
 * that has an abort listener reachable from a global set until it aborts, so every call's signal, with
 * the activity context and input its listeners close over, stayed in the worker's heap for the whole
 * tool timeout (an hour for a tool declared so), after the call had long finished. A plain controller,
 * released when the attempt settles, is garbage as soon as the tool lets go of it.
 */
export interface AttemptSignal {
  /** The tool's: aborted at once, by the batch or a timeout. */
  signal: AbortSignal;
  /**
   * When to stop waiting for the attempt: at a timeout, or `graceMs` after the batch's abort. A call
   * asked to stop may still finish meanwhile (its side effect is done): then its result counts.
   */
  waitUntil: AbortSignal;
  /** Whether a timeout, not the batch, aborted it: the idle one (`idleMs`) or the total. */
  timedOut(): false | 'idle' | 'total';
  /** The attempt made progress: the idle timeout starts anew (without `idleMs`, nothing happens). */
  progressed(): void;
  /** Stops the timer and unhooks from the batch's signal; call once the attempt has settled. */
  release(): void;
}

/**
 * Aborted by the batch, after `timeoutMs` in all, or (with `idleMs`) after that long without
 * `progressed()`; waited for until a timeout or `graceMs` after the batch's abort.
 */
export function attemptSignal(batch: AbortSignal, timeoutMs: number, idleMs?: number, graceMs = 0): AttemptSignal {
  const controller = new AbortController();
  const waiting = new AbortController();
  let grace: ReturnType<typeof setTimeout> | undefined;
  let timedOut: false | 'idle' | 'total' = false;
  const onBatchAbort = () => {
    controller.abort(batch.reason);
    if (graceMs <= 0) waiting.abort(batch.reason);
    else grace = setTimeout(() => waiting.abort(batch.reason), graceMs);
  };
  const expire = (which: 'idle' | 'total') => () => {
    if (controller.signal.aborted) return;
    timedOut = which;
    const reason = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    controller.abort(reason);
    waiting.abort(reason);
  };
  const timer = setTimeout(expire('total'), timeoutMs);
  let idle = idleMs !== undefined && idleMs < timeoutMs ? setTimeout(expire('idle'), idleMs) : undefined;
  let released = false;
  const release = () => {
    released = true;
    clearTimeout(timer);
    clearTimeout(idle);
    clearTimeout(grace);
    batch.removeEventListener('abort', onBatchAbort);
  };
  const progressed = () => {
    if (idle === undefined || released || controller.signal.aborted) return;
    clearTimeout(idle);
    idle = setTimeout(expire('idle'), idleMs);
  };
  if (batch.aborted) onBatchAbort();
  else batch.addEventListener('abort', onBatchAbort, { once: true });
  return { signal: controller.signal, waitUntil: waiting.signal, timedOut: () => timedOut, progressed, release };
}

/** The promise, or the signal's reason once it aborts first; the signal's listener goes when either settles. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Waits, or less when the signal aborts first. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
