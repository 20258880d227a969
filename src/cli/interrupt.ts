import type { RunHandle } from '../client/patchloop-client';
import { EXIT } from './errors';
import { note } from './worker-watch';

/**
 * What Ctrl-C while following a run says: the run goes on (only the command stops), and the exact
 * commands to follow it again or to abort it. Ctrl-C never aborts a run: `chat` aborts a turn, which a
 * session survives; a run is aborted by its own command only.
 */
function detachedLines(workflowId: string): string[] {
  return [
    `detached: ${workflowId} goes on without this command`,
    `  follow it again: npx patchloop follow ${workflowId}`,
    `  abort it:        npx patchloop abort ${workflowId}`,
  ];
}

/** Ends the command as Ctrl-C does (exit status 130), saying that the run goes on and how to reach it. */
export function detach(workflowId: string): never {
  for (const line of detachedLines(workflowId)) note(line);
  process.exit(EXIT.interrupted);
}

/** Until the returned function is called, Ctrl-C (SIGINT) detaches from the run instead of ending silently. */
export function detachOnInterrupt(run: RunHandle): () => void {
  const onInterrupt = () => detach(run.workflowId);
  process.once('SIGINT', onInterrupt);
  return () => void process.off('SIGINT', onInterrupt);
}

/** Resolves at the first Ctrl-C (SIGINT) or SIGTERM: a server command's life. */
export function untilInterrupted(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}
