import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { FakeModelServer } from '../../src/fake-model/server';
import type { AgentDefinitionInput } from '../../src/runtime';
import { cliEntry, sharedBundleArgs } from './compiled';
import { repositoryRoot } from './reference';

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

/**
 * A client and `patchloop worker` processes (`start` spawns one more, with `env` besides the defaults)
 * serving `agents` against the fake model on a task queue of their own. What it starts (the fake model
 * included) is closed by the functions it adds to `cleanups`; workers are killed with SIGKILL.
 */
export async function workerProcesses(
  fake: FakeModelServer,
  agents: AgentDefinitionInput[],
  name: string,
  cleanups: Array<() => Promise<void> | void>,
) {
  // Loaded here, not at the top: './temporal' imports vitest, which scripts run by tsx (`npm run chaos`,
  // spawnWorker's users outside vitest) cannot load.
  const { clientOn, temporalAddress } = await import('./temporal.js');
  const taskQueue = `${name}-${randomUUID()}`;
  const client = await clientOn(taskQueue);
  const workers: WorkerProcess[] = [];
  cleanups.push(
    () => fake.close(),
    () => client.close(),
    async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
    },
  );
  const start = async (env: Record<string, string> = {}) => {
    const worker = await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents, env });
    workers.push(worker);
    return worker;
  };
  return { client, start };
}
