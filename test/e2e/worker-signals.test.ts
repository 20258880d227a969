import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import type { PatchloopClient } from '../../src/client/patchloop-client';
import { sharedBundleArgs } from '../../support/compiled';
import { commandLine, isRunning, processTree } from '../../support/process-tree';
import { repositoryRoot } from '../../support/repository';
import { clientOn, temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';

interface StartedWorker {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: StartedWorker[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  // Whatever a test left running, in the worker's own process group: an orphan stays in it.
  for (const worker of started.splice(0)) {
    try {
      process.kill(-worker.child.pid!, 'SIGKILL');
    } catch {
      // The group is gone: every process of it has exited.
    }
  }
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/**
 * The worker as a user starts it in a terminal, from the checkout: `npx patchloop worker` or
 * `patchloop worker` (node bin/patchloop.js), in a process group of its own (a shell gives each command
 * one), with no npm_* variables of the test runner in its environment.
 */
function startWorker(how: 'npx' | 'patchloop', args: string[], env: Record<string, string>): StartedWorker {
  const shell = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
  const [command, ...commandArgs] =
    how === 'npx'
      ? ['npx', 'patchloop', 'worker', ...args]
      : [process.execPath, join(repositoryRoot, 'bin', 'patchloop.js'), 'worker', ...args];
  const child = spawn(command!, commandArgs, {
    cwd: repositoryRoot,
    env: { ...shell, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const worker = { child, output: () => output, exited };
  started.push(worker);
  return worker;
}

/** A fake model, a task queue and a client of it: what a worker started for one test serves. */
async function world(script: Parameters<typeof FakeModelServer.start>[0]) {
  const fake = await FakeModelServer.start(script);
  const taskQueue = `signals-${randomUUID()}`;
  const client = await clientOn(taskQueue);
  cleanups.push(
    () => client.close(),
    () => fake.close(),
  );
  const env = {
    TEMPORAL_ADDRESS: temporalAddress(),
    PATCHLOOP_TASK_QUEUE: taskQueue,
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: 'test-key',
    PATCHLOOP_MODEL: 'fake-model',
  };
  return { fake, client, env };
}

/** Waits until the worker serves runs: one run completes on it. */
async function servesRuns(client: PatchloopClient, worker: StartedWorker): Promise<void> {
  const run = await client.start({ agent: 'assistant', input: 'are you there?' });
  const result = await Promise.race([
    run.result(),
    worker.exited.then(() => {
      throw new Error(`the worker exited before serving a run:\n${worker.output()}`);
    }),
  ]);
  expect(result.status).toBe('completed');
}

/** Waits until none of these processes runs, naming the ones that still do when they outlive the wait. */
async function allExited(tree: number[]): Promise<void> {
  const names = new Map(tree.map((pid) => [pid, commandLine(pid)]));
  try {
    await eventually(() => (tree.some(isRunning) ? undefined : true), 30_000, 'every process of the tree to exit');
  } catch (error) {
    const survivors = tree.filter(isRunning).map((pid) => `${pid} ${names.get(pid)}`);
    throw new Error(`${(error as Error).message}; still running:\n${survivors.join('\n')}`);
  }
}

describe('signals stop the worker a user started', () => {
  it('npx patchloop worker: SIGTERM to the npx process stops every process of its tree', async () => {
    const { client, env } = await world({ script: [reply('here')] });
    const worker = startWorker('npx', sharedBundleArgs(), env);
    await servesRuns(client, worker);
    // npm exec -> sh -c -> node bin/patchloop.js (-> the esbuild service tsx runs the sources with).
    const tree = processTree(worker.child.pid!);
    expect(tree.map(commandLine).some((line) => /bin\/patchloop(\.js)? worker/.test(line))).toBe(true);
    expect(tree.length).toBeGreaterThanOrEqual(3);
    process.kill(worker.child.pid!, 'SIGTERM');
    await allExited(tree);
    expect(worker.output()).toContain('the process that started this worker exited: stopping');
    expect(worker.output()).toContain('worker stopped');
  });

  it('npx patchloop worker: SIGINT to its process group (Ctrl-C in a terminal) stops every process of it', async () => {
    const { client, env } = await world({ script: [reply('here')] });
    const worker = startWorker('npx', sharedBundleArgs(), env);
    await servesRuns(client, worker);
    const tree = processTree(worker.child.pid!);
    process.kill(-worker.child.pid!, 'SIGINT');
    await allExited(tree);
    expect(worker.output()).toContain('worker stopped');
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('patchloop worker: %s stops it, exit code 0', async (signal) => {
    const { client, env } = await world({ script: [reply('here')] });
    const worker = startWorker('patchloop', sharedBundleArgs(), env);
    await servesRuns(client, worker);
    const tree = processTree(worker.child.pid!);
    process.kill(worker.child.pid!, signal);
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    await allExited(tree);
    expect(worker.output()).toContain('worker stopped');
  });

  it('a second signal ends a worker that a tool ignoring its abort still holds', async () => {
    const { client, env } = await world({
      script: [callTools([{ id: 'call_linger', name: 'linger', arguments: '{}' }]), reply('never reached')],
    });
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-signals-'));
    const agentsFile = join(folder, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify([{ name: 'lingerer', instructions: 'You linger.', tools: ['linger'] }]));
    const tools = join(repositoryRoot, 'test', 'support', 'lingering-tools.ts');
    const worker = startWorker('patchloop', ['--agents', agentsFile, '--tools', tools, ...sharedBundleArgs()], env);
    await eventually(
      () => (worker.output().includes('worker polling') ? true : undefined),
      90_000,
      'the worker to poll',
    );
    const run = await client.start({ agent: 'lingerer', input: 'linger' });
    // Ended before its client closes: no worker of this queue is left to finish it.
    cleanups.unshift(() => run.workflow.terminate('test over').then(() => undefined));
    await eventually(() => (worker.output().includes('linger started') ? true : undefined), 30_000, 'the tool to run');
    process.kill(worker.child.pid!, 'SIGTERM');
    await eventually(
      () => (worker.output().includes('worker stopped') ? true : undefined),
      30_000,
      'the worker to stop',
    );
    // The worker has stopped; the tool's timer still holds the process.
    expect(isRunning(worker.child.pid!)).toBe(true);
    process.kill(worker.child.pid!, 'SIGTERM');
    expect(await worker.exited).toEqual({ code: null, signal: 'SIGTERM' });
  });
});
