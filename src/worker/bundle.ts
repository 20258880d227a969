import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BundleOptions } from '@temporalio/worker';

/** What a child process can be sent: the bundle options that are data (paths), no hooks or plugins. */
export type BundleRequest = Pick<
  BundleOptions,
  'workflowsPath' | 'preloadModules' | 'workflowInterceptorModules' | 'ignoreModules'
>;

/**
 * Builds the workflow bundle in a child process and returns its code. Bundling in the worker itself
 * leaves webpack's module graph and caches in its heap for good (about 145 MB of a worker's RSS,
 * measured side by side); a child gives all of it back when it exits. The child runs with this
 * process's Node options, so under tsx it loads the TypeScript sources as this process does.
 */
export async function bundleInChildProcess(request: BundleRequest): Promise<{ code: string }> {
  const source = join(__dirname, 'bundle-entry.ts');
  const entry = existsSync(source) ? source : join(__dirname, 'bundle-entry.js');
  // The sources run through tsx: a process that registered it in code (bin/patchloop.js in a checkout)
  // has no Node option that says so.
  const tsx = entry === source && !process.execArgv.some((option) => option.includes('tsx'));
  const child = fork(entry, [], {
    execArgv: [...process.execArgv, ...(tsx ? ['--require', require.resolve('tsx/cjs')] : [])],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4096);
  });
  return new Promise((resolve, reject) => {
    let answer: { code?: string; error?: string } | undefined;
    child.once('message', (message: { code?: string; error?: string }) => {
      answer = message;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (answer?.code !== undefined) return resolve({ code: answer.code });
      // The bundler's own message, or the first line of what the child printed: no stack for the user.
      const printed = stderr
        .split('\n')
        .find((line) => /error/i.test(line))
        ?.trim();
      const why = answer?.error ?? printed ?? `the bundler exited with ${signal ?? `code ${String(code)}`}`;
      reject(new Error(`could not bundle the workflows: ${why}`));
    });
    child.send(request);
  });
}
