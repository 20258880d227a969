import type { RunHandle } from '../client/patchloop-client';

/** How long a protocol's cancel waits for the run to end after asking it to abort. */
const CANCEL_WAIT_MS = 30_000;

/**
 * A protocol's cancel (A2A's CancelTask, the Responses API's cancel, MCP's tasks/cancel): the run is
 * asked to abort, and the answer waits until it has ended, within a bound (a run slower than that is
 * answered as it stands). Aborting a run that has ended changes nothing: cancel is idempotent.
 */
export async function abortAndWait(run: RunHandle, reason: string): Promise<void> {
  await run.abort(reason).catch(() => undefined);
  await run.workflow.client
    .withAbortSignal(AbortSignal.timeout(CANCEL_WAIT_MS), () => run.workflow.result())
    .catch(() => undefined);
}
