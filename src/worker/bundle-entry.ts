/**
 * The child process `bundleInChildProcess` forks: builds the workflow bundle with the options it is sent
 * and sends the code back. webpack's module graph then never lives in the worker's heap.
 */
import { bundleWorkflowCode, DefaultLogger, type BundleOptions } from '@temporalio/worker';

process.once('message', (options: BundleOptions) => {
  bundleWorkflowCode({ ...options, logger: new DefaultLogger('WARN') }).then(
    ({ code }) => process.send?.({ code }, () => process.disconnect()),
    (error: unknown) =>
      process.send?.({ error: error instanceof Error ? error.message : String(error) }, () => process.disconnect()),
  );
});
