import { DefaultLogger, Runtime } from '@temporalio/worker';
import { buildWorkflowBundle } from '../../worker/create-worker';
import { writeBundleFile } from '../../worker/bundle-file';
import { tracingFromEnvironment } from '../../worker/tracing';
import { parseCommand } from '../arguments';
import { BUNDLE_SYNTAX } from '../syntax';

/** `patchloop bundle FILE`: the workflow bundle a worker would build, written once for many workers. */
export async function bundleCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const file = parseCommand(args, BUNDLE_SYNTAX).positionals['file']!;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const tracing = tracingFromEnvironment();
  try {
    const bundle = await buildWorkflowBundle(tracing);
    await writeBundleFile(file, bundle, tracing !== undefined);
    print(`wrote the workflow bundle to ${file} (${bundle.code.length} bytes${tracing ? ', with tracing' : ''})`);
  } finally {
    await tracing?.shutdown();
  }
  return undefined;
}
