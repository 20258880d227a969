import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigurationError } from '../runtime';
import { packageRoot } from './source-file';

/**
 * The first line of a bundle file `patchloop bundle` writes: a marker and what the bundle was built
 * with. A worker refuses any other file, and a bundle of another patchloop version: a wrong path or a
 * stale image fails at start with a clear error, not as workflow tasks that fail.
 */
const MARKER = '// patchloop workflow bundle ';

/** What a bundle was built by, and whether the tracing plugin's workflow interceptors are in it. */
export interface BundleIdentity {
  patchloop: string;
  tracing: boolean;
}

function patchloopVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Writes a workflow bundle to a file: built once (in a CI step, a Docker image layer, a test suite's
 * set-up), every worker of the same build loads it instead of bundling at start (about 4 s and
 * ~150 MB of a child process each). The bundle is workflow code: build it from the very sources the
 * workers run, or replays of running workflows may diverge.
 */
export async function writeBundleFile(file: string, bundle: { code: string }, tracing: boolean): Promise<void> {
  const identity: BundleIdentity = { patchloop: patchloopVersion(), tracing };
  await writeFile(file, `${MARKER}${JSON.stringify(identity)}\n${bundle.code}`);
}

/** A bundle file `writeBundleFile` wrote: its code, as the worker option `workflowBundle` takes it, and its identity. */
export async function readBundleFile(file: string): Promise<{ code: string; identity: BundleIdentity }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`cannot read the workflow bundle ${file}: ${(error as Error).message}`);
  }
  const firstLine = text.slice(0, text.indexOf('\n'));
  let identity: BundleIdentity | undefined;
  try {
    identity = firstLine.startsWith(MARKER)
      ? (JSON.parse(firstLine.slice(MARKER.length)) as BundleIdentity)
      : undefined;
  } catch {
    identity = undefined;
  }
  if (!identity) throw new ConfigurationError(`${file} is not a workflow bundle written by 'patchloop bundle'`);
  const version = patchloopVersion();
  if (identity.patchloop !== version)
    throw new ConfigurationError(
      `${file} was built by patchloop ${identity.patchloop}, this worker is ${version}: build the bundle again with 'patchloop bundle' from the code the worker runs`,
    );
  return { code: text.slice(firstLine.length + 1), identity };
}
