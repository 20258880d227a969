import { ServiceError, type WorkflowHandle } from '@temporalio/client';

/** gRPC codes a wait for a result outlives: the server busy, out of reach for a moment, or slow to answer. */
const TRANSIENT_CODES = new Set([
  4, // DEADLINE_EXCEEDED
  8, // RESOURCE_EXHAUSTED: e.g. temporal-server's 1,200 long polls at once per namespace and frontend
  14, // UNAVAILABLE
]);

export interface ResultWaitOptions {
  /** The first pause after a refusal (doubled at each one after it, up to `maxPauseMs`). */
  firstPauseMs?: number;
  maxPauseMs?: number;
  /** How long refusals in a row are borne before the last one is thrown. */
  giveUpAfterMs?: number;
  /** Stops the wait (its long poll and its pauses): the call rejects. */
  signal?: AbortSignal;
}

/** Whether a client call failed for a reason that waiting cures. */
export function isTransientServiceError(error: unknown): boolean {
  const code = (error instanceof ServiceError ? error.cause : undefined) as { code?: unknown } | undefined;
  return typeof code?.code === 'number' && TRANSIENT_CODES.has(code.code);
}

/**
 * A workflow's result, waited for through the server's refusals: waiting is idempotent, and a service
 * that waits for thousands of runs at once meets temporal-server's cap on concurrent long polls
 * (RESOURCE_EXHAUSTED), which the SDK passes on. Pauses grow from 0.25 s to 5 s, with jitter; after 10
 * minutes of refusals in a row the last one is thrown. Any other error is thrown at once.
 */
export async function workflowResult(workflow: WorkflowHandle, options: ResultWaitOptions = {}): Promise<unknown> {
  const { firstPauseMs = 250, maxPauseMs = 5000, giveUpAfterMs = 600_000, signal } = options;
  const wait = () => (signal ? workflow.client.withAbortSignal(signal, () => workflow.result()) : workflow.result());
  let refusedSince: number | undefined;
  let pause = firstPauseMs;
  for (;;) {
    try {
      return await wait();
    } catch (error) {
      if (!isTransientServiceError(error) || signal?.aborted) throw error;
      refusedSince ??= Date.now();
      if (Date.now() - refusedSince >= giveUpAfterMs) throw error;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pause * (0.5 + Math.random() / 2));
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve();
        }
        signal?.addEventListener('abort', done, { once: true });
      });
      if (signal?.aborted) throw error;
      pause = Math.min(maxPauseMs, pause * 2);
    }
  }
}
