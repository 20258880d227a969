import { spawn } from 'node:child_process';
import { repositoryRoot } from '../../support/repository';
import { cliEntry, sharedBundleArgs } from '../../support/compiled';
import { eventually } from './wait';
import timeouts from '../timeouts.json';

/**
 * The CLI as a process (`cliEntry`: compiled in the e2e run, the checkout's binary otherwise), with
 * extra environment and standard input.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  stdin = '',
  entry = cliEntry(),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry, ...args], { cwd: repositoryRoot, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/**
 * A long-running CLI command (`patchloop <args>`) as a process, ready once its output includes `ready`;
 * `stop()` sends SIGINT and waits for it to exit (`exited`: its exit status). `launcher` runs it another way
 * than node and the entry (`['npx', 'patchloop']`, as a user types it).
 */
export async function startCliProcess(
  args: string[],
  env: Record<string, string>,
  ready: { text: string; what: string; timeoutMs: number },
  where: { entry?: string; cwd?: string; launcher?: string[] } = {},
): Promise<{ output(): string; stop(): Promise<void>; exited: Promise<number | null>; pid: number }> {
  const [program, ...before] = where.launcher ?? [process.execPath, where.entry ?? cliEntry()];
  // A launcher's processes (npx, its shell, the command) get SIGINT together, as Ctrl-C gives it to a
  // terminal's foreground group: npx's shell would hold a signal sent to npx alone.
  const child = spawn(program!, [...before, ...args], {
    cwd: where.cwd ?? repositoryRoot,
    env: { ...process.env, ...env },
    detached: where.launcher !== undefined,
  });
  let output = '';
  child.stdout.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr.on('data', (data: Buffer) => (output += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      if (where.launcher) process.kill(-child.pid!, 'SIGINT');
      else child.kill('SIGINT');
    }
    await exited;
  };
  try {
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`patchloop ${args[0]} exited:\n${output}`);
        return output.includes(ready.text) ? true : undefined;
      },
      ready.timeoutMs,
      ready.what,
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n${output}`);
  }
  return { output: () => output, stop, exited, pid: child.pid! };
}

/** `patchloop serve` as a process on a free port, with the agents and keys of these files (and `more` options): its URL. */
export async function startGatewayProcess(
  agentsFile: string,
  keysFile: string,
  env: Record<string, string>,
  more: string[] = [],
) {
  const gateway = await startCliProcess(
    ['serve', '--port', '0', '--agents', agentsFile, '--keys-file', keysFile, ...more],
    env,
    {
      text: 'patchloop gateway at',
      what: 'the gateway',
      timeoutMs: timeouts.e2e,
    },
  );
  return { process: gateway, url: /patchloop gateway at (\S+)/.exec(gateway.output())![1]! };
}

/**
 * `patchloop worker ...` as a process, ready once it reports polling; `stop()` sends SIGINT and waits.
 * It loads the run's shared workflow bundle unless `ownBundle` (a worker that must bundle for itself).
 * `entry` and `cwd`: another CLI (an installed package's bin) started in another folder (its project).
 */
export function startCliWorker(
  args: string[],
  env: Record<string, string>,
  options: { ownBundle?: boolean; entry?: string; cwd?: string } = {},
): Promise<{ output(): string; stop(): Promise<void>; exited: Promise<number | null>; pid: number }> {
  const bundle = options.ownBundle ? [] : sharedBundleArgs();
  return startCliProcess(
    ['worker', ...args, ...bundle],
    env,
    // A bound on a hang: a worker that bundles its own workflows took over 90 s on a loaded machine.
    { text: 'worker polling', what: 'the worker to poll', timeoutMs: timeouts.e2e },
    { ...(options.entry ? { entry: options.entry } : {}), ...(options.cwd ? { cwd: options.cwd } : {}) },
  );
}
