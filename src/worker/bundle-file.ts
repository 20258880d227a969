import { readFile, writeFile } from 'node:fs/promises';
import { ConfigurationError } from '../runtime';

/**
 * The first line of a bundle file `patchloop bundle` writes. A worker refuses any other file: a wrong
 * path or a file of something else fails at start with a clear error, not as workflow tasks that fail.
 */
const MARKER = '// patchloop workflow bundle';

/**
 * Writes a workflow bundle to a file: built once (in a CI step, a Docker image layer, a test suite's
 * set-up), every worker of the same build loads it instead of bundling at start (about 3.6 s and
 * ~150 MB of a child process each). The bundle is workflow code: build it from the very sources the
 * workers run, or replays of running workflows may diverge.
 */
export async function writeBundleFile(file: string, bundle: { code: string }): Promise<void> {
  await writeFile(file, `${MARKER}\n${bundle.code}`);
}

/** A bundle file `writeBundleFile` wrote, as the worker option `workflowBundle` takes it. */
export async function readBundleFile(file: string): Promise<{ code: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`cannot read the workflow bundle ${file}: ${(error as Error).message}`);
  }
  if (!text.startsWith(`${MARKER}\n`))
    throw new ConfigurationError(`${file} is not a workflow bundle written by 'patchloop bundle'`);
  return { code: text.slice(MARKER.length + 1) };
}
