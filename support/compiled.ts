import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repositoryRoot } from './repository';

const run = promisify(execFile);

/** The compiled CLI, as an installed package runs it (`npm run build` writes it; `prepare` too). */
export const compiledCli = join(repositoryRoot, 'dist', 'src', 'cli', 'cli.js');
const buildInfo = join(repositoryRoot, 'dist', '.tsbuildinfo');

/** The newest modification time of the sources the compiled code is built from. */
function newestSource(folder = join(repositoryRoot, 'src')): number {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds the compiled code from the current sources when it is missing or older than them (an
 * incremental `tsc`), so the processes tests start run exactly the code under test, without compiling
 * TypeScript at every start (tsx: about 0.4 s more per CLI call, seconds per worker).
 */
export async function freshCompiledCli(): Promise<string> {
  const configs = ['package.json', 'tsconfig.json', 'tsconfig.build.json'].map((name) => join(repositoryRoot, name));
  const sources = Math.max(newestSource(), ...configs.map((file) => statSync(file).mtimeMs));
  if (!existsSync(compiledCli) || !existsSync(buildInfo) || statSync(buildInfo).mtimeMs < sources) {
    await run(
      process.execPath,
      [join(repositoryRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: repositoryRoot },
    );
    // An incremental build with nothing to emit leaves the file as it was: mark it built from the
    // sources as they were before the build, so an edit made during it still counts as newer.
    const builtFrom = new Date(sources);
    utimesSync(buildInfo, builtFrom, builtFrom);
  }
  return compiledCli;
}

/**
 * The CLI as tests start it: the compiled CLI the e2e set-up built (PATCHLOOP_TEST_CLI), or else the
 * checkout's binary (the sources through tsx), as `npx patchloop` runs it.
 */
export function cliEntry(): string {
  return process.env['PATCHLOOP_TEST_CLI'] ?? join(repositoryRoot, 'bin', 'patchloop.js');
}

/**
 * The workflow bundle the e2e set-up wrote once for the run (PATCHLOOP_TEST_WORKFLOW_BUNDLE), as
 * `patchloop worker` arguments: none outside the e2e run, where a worker bundles for itself.
 */
export function sharedBundleArgs(): string[] {
  const file = process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE'];
  return file ? ['--workflow-bundle', file] : [];
}

/** Writes the workflow bundle once for a test run, with the compiled CLI's own `patchloop bundle`. */
export async function writeSharedBundle(cli: string, file: string): Promise<void> {
  await run(process.execPath, [cli, 'bundle', file], { cwd: repositoryRoot });
}
