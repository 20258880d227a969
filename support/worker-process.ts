import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentDefinitionInput } from '../src/runtime';
import { cliEntry, sharedBundleArgs } from './compiled';
import { repositoryRoot } from './repository';

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * `patchloop worker` as a real child process (the CLI, `cliEntry`), ready once it reports it is polling.
 */
export async function spawnWorker(options: {
  address: string;
  taskQueue: string;
  modelUrl: string;
  agents: AgentDefinitionInput[];
  env?: Record<string, string>;
  /** More arguments for `patchloop worker` (e.g. `--tools <module>`). */
  args?: string[];
  /** Bundle its workflow code itself instead of loading the run's shared bundle. */
  ownBundle?: boolean;
}): Promise<WorkerProcess> {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-worker-'));
  const agentsFile = join(folder, 'agents.json');
  writeFileSync(agentsFile, JSON.stringify(options.agents));
  const child = spawn(
    process.execPath,
    [
      cliEntry(),
      'worker',
      '--agents',
      agentsFile,
      ...(options.args ?? []),
      ...(options.ownBundle ? [] : sharedBundleArgs()),
    ],
    {
      cwd: repositoryRoot,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: options.address,
        PATCHLOOP_TASK_QUEUE: options.taskQueue,
        OPENAI_BASE_URL: options.modelUrl,
        OPENAI_API_KEY: 'test-key',
        PATCHLOOP_MODEL: 'fake-model',
        PATCHLOOP_STICKY_QUEUE_TIMEOUT: '1s',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start in 60 s:\n${output}`)), 60_000);
    const check = () => {
      if (output.includes('worker polling')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code}) before polling:\n${output}`));
    });
  });
  return {
    child,
    output: () => output,
    kill: (signal) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
