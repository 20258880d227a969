/**
 * The child process `bundleInChildProcess` forks: builds the workflow bundle with the options it is sent
 * and sends the code back. webpack's module graph then never lives in the worker's heap.
 */
import { bundleWorkflowCode, DefaultLogger, type BundleOptions } from '@temporalio/worker';
import { PARENT_GONE_EXIT_CODE } from './bundle';

let answered = false;
// A parent that dies (or is killed alone) closes the IPC channel: stop building for nobody.
process.once('disconnect', () => {
  if (!answered) process.exit(PARENT_GONE_EXIT_CODE);
});

process.once('message', (options: BundleOptions) => {
  const answer = (message: { code: string } | { error: string }) => {
    answered = true;
    process.send?.(message, () => process.disconnect());
  };
  bundleWorkflowCode({ ...options, logger: new DefaultLogger('WARN') }).then(
    ({ code }) => answer({ code }),
    (error: unknown) => answer({ error: error instanceof Error ? error.message : String(error) }),
  );
});
