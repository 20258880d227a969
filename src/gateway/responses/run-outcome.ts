import { RunFailedError, type RunHandle } from '../../client/patchloop-client';
import type { ResponseEnd } from './response-timeline';

/** A run's result status as a response's. */
const STATUS_OF_RESULT = { completed: 'completed', aborted: 'cancelled', budget_exhausted: 'incomplete' } as const;

/**
 * How the run behind a response stands: in progress while it runs; else its result (status, usage,
 * whole answer) or its failure. A run terminated or cancelled through Temporal is cancelled.
 */
export async function runOutcome(handle: RunHandle): Promise<ResponseEnd> {
  const description = await handle.workflow.describe();
  if (description.status.name === 'RUNNING') return { status: 'in_progress', usage: null, error: null, answer: null };
  try {
    const result = await handle.result();
    return { status: STATUS_OF_RESULT[result.status], usage: result.usage, error: null, answer: result.answer };
  } catch (error) {
    if (!(error instanceof RunFailedError)) throw error;
    const cancelled = description.status.name === 'TERMINATED' || description.status.name === 'CANCELLED';
    return {
      status: cancelled ? 'cancelled' : 'failed',
      usage: null,
      error: { code: cancelled ? 'cancelled' : (error.type ?? 'server_error'), message: error.causeMessage },
      answer: null,
    };
  }
}
