import { fork, type ChildProcess } from 'node:child_process';
import type { BundleOptions } from '@temporalio/worker';
import { sourceFile } from './source-file';

/** What a child process can be sent: the bundle options that are data (paths), no hooks or plugins. */
export type BundleRequest = Pick<BundleOptions, 'workflowsPath' | 'preloadModules' | 'workflowInterceptorModules'>;

/**
 * Builds the workflow bundle in a child process and returns its code. Bundling in the worker itself
 * leaves webpack's module graph and caches in its heap for good (about 145 MB of a worker's RSS,
 * measured side by side); a child gives all of it back when it exits. The child runs with this
 * process's Node options, so under tsx it loads the TypeScript sources as this process does.
 */
export async function bundleInChildProcess(request: BundleRequest): Promise<{ code: string }> {
  const child = forkBundler();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4096);
  });
  return new Promise((resolve, reject) => {
    let answer: { code?: string; error?: string } | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), BUNDLE_TIMEOUT_MS);
    // The answer counts when it arrives; 'close' (after the IPC channel too) tells a child that gave none.
    child.once('message', (message: { code?: string; error?: string }) => {
      answer = message;
      if (message.code !== undefined) {
        clearTimeout(timer);
        resolve({ code: message.code });
      }
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (answer?.code !== undefined) return;
      // The bundler's own message, or the first line of what the child printed: no stack for the user.
      const printed = stderr
        .split('\n')
        .find((line) => /error/i.test(line))
        ?.trim();
      const ended = signal === 'SIGKILL' ? `no answer within ${BUNDLE_TIMEOUT_MS / 1000} s` : undefined;
      const why = answer?.error ?? ended ?? printed ?? `the bundler exited with ${signal ?? `code ${String(code)}`}`;
      reject(new Error(`could not bundle the workflows: ${why}`));
    });
    child.send(request);
  });
}

/** The bundling child, waiting for its request on the IPC channel; its stderr piped. */
export function forkBundler(): ChildProcess {
  const entry = sourceFile('worker', 'bundle-entry');
  // The sources run through tsx: a process that registered it in code (bin/patchloop.js in a checkout)
  // has no Node option that says so.
  const tsx = entry.endsWith('.ts') && !process.execArgv.some((option) => option.includes('tsx'));
  return fork(entry, [], {
    execArgv: [...childNodeOptions(process.execArgv), ...(tsx ? ['--require', require.resolve('tsx/cjs')] : [])],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}

/** Bundling takes seconds; a child that hangs (a debugger flag it should not have had) is killed. */
const BUNDLE_TIMEOUT_MS = 5 * 60 * 1000;
/** The exit code of a bundling child whose parent went away before it answered. */
export const PARENT_GONE_EXIT_CODE = 3;

/**
 * This process's Node options the child keeps: loaders, conditions, memory. Not code to evaluate
 * (`-e`, `-p`: the child would run the parent's script) nor a debugger (`--inspect-brk` waits forever,
 * `--inspect` takes the parent's port).
 */
export function childNodeOptions(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < execArgv.length; index += 1) {
    const option = execArgv[index]!;
    if (['-e', '--eval', '-p', '--print'].includes(option)) index += 1;
    else if (!/^(--eval=|--print=|--inspect|--debug)/.test(option)) kept.push(option);
  }
  return kept;
}
