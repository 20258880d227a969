import type { StreamResponse } from '@a2a-js/sdk';
import { RunFailedError, type RunHandle } from '../../client/patchloop-client';
import { endOfResult, endUpdates, type TaskIds } from '../../a2a/task-updates';

/**
 * The last updates of a run that has closed, from its result (Temporal's history: no worker needed): its
 * answer and its final state, or failed with the failure's own words.
 */
export async function closedRunUpdates(run: RunHandle, ids: TaskIds, signal?: AbortSignal): Promise<StreamResponse[]> {
  const messageId = `${ids.taskId}:end`;
  const now = () => new Date().toISOString();
  try {
    const read = () => run.result();
    const result = signal ? await run.workflow.client.withAbortSignal(signal, read) : await read();
    return endUpdates(ids, endOfResult(result), now(), messageId);
  } catch (error) {
    if (!(error instanceof RunFailedError)) throw error;
    return endUpdates(ids, { status: 'failed', answer: '', reason: error.causeMessage }, now(), messageId);
  }
}
