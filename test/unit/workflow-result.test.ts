import { ServiceError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { isTransientServiceError, workflowResult } from '../../src/client/workflow-result';

/** A gRPC failure as the SDK passes it on once its own retries are spent. */
const refusal = (code: number) =>
  new ServiceError('Failed to get Workflow execution history', { cause: Object.assign(new Error('grpc'), { code }) });

/** A handle whose `result()` answers from a list of outcomes, one per call. */
function handle(outcomes: Array<Error | string>): { workflow: WorkflowHandle; calls: () => number } {
  let calls = 0;
  const workflow = {
    result: async () => {
      const outcome = outcomes[Math.min(calls, outcomes.length - 1)]!;
      calls += 1;
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    client: { withAbortSignal: (_signal: AbortSignal, call: () => Promise<unknown>) => call() },
  } as unknown as WorkflowHandle;
  return { workflow, calls: () => calls };
}

const fast = { firstPauseMs: 1, maxPauseMs: 4 };

describe('workflowResult: a wait for a result through the server refusing it', () => {
  it('waits through RESOURCE_EXHAUSTED, UNAVAILABLE and DEADLINE_EXCEEDED, and returns the result', async () => {
    const { workflow, calls } = handle([refusal(8), refusal(14), refusal(4), 'the result']);
    await expect(workflowResult(workflow, fast)).resolves.toBe('the result');
    expect(calls()).toBe(4);
  });

  it('throws any other error at once', async () => {
    const notFound = refusal(5);
    const failed = new Error('the run failed');
    for (const error of [notFound, failed]) {
      const { workflow, calls } = handle([error, 'never']);
      await expect(workflowResult(workflow, fast)).rejects.toBe(error);
      expect(calls()).toBe(1);
    }
    expect([8, 14, 4, 5, 3].map((code) => isTransientServiceError(refusal(code)))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  it('gives up after refusals in a row for its bound, with the last refusal', async () => {
    const busy = refusal(8);
    const { workflow, calls } = handle([busy]);
    await expect(workflowResult(workflow, { ...fast, giveUpAfterMs: 30 })).rejects.toBe(busy);
    expect(calls()).toBeGreaterThan(2);
  });

  it('stops at once when its signal aborts during a pause', async () => {
    const busy = refusal(8);
    const { workflow, calls } = handle([busy]);
    const abort = new AbortController();
    const waiting = workflowResult(workflow, { firstPauseMs: 60_000, signal: abort.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    abort.abort();
    await expect(waiting).rejects.toBe(busy);
    expect(calls()).toBe(1);
  });
});
