import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { FakeModelServer } from '../../src/fake-model/server';
import type { FakeStep } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { repositoryRoot } from '../../support/repository';
import { startSideEffectServer } from '../../support/side-effects';
import { clientOn, temporalAddress } from './temporal';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

const toolsModule = join(repositoryRoot, 'test', 'support', 'side-effect-tools.ts');

/**
 * A side-effect server, a fake model and worker processes (`patchloop worker --tools` with the
 * side-effect tools) on a task queue of their own; `start` spawns one more worker, named for the
 * effects it performs, on the queue given (the tools queue for a tools-only worker). What it starts is
 * closed by the functions it adds to `cleanups`.
 */
export async function sideEffectWorld(
  script: FakeStep[],
  agent: (toolQueue: string) => AgentDefinitionInput,
  cleanups: Array<() => Promise<void>>,
) {
  const effects = await startSideEffectServer();
  const fake = await FakeModelServer.start({ script });
  const taskQueue = `effects-${randomUUID()}`;
  const toolQueue = `${taskQueue}-tools`;
  const client = await clientOn(taskQueue);
  const workers: WorkerProcess[] = [];
  cleanups.push(
    () => effects.close(),
    () => fake.close(),
    () => client.close(),
    async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
    },
  );
  const start = async (name: string, args: string[] = [], queue = taskQueue) => {
    const worker = await spawnWorker({
      address: temporalAddress(),
      taskQueue: queue,
      modelUrl: fake.url,
      agents: [agent(toolQueue)],
      args: ['--tools', toolsModule, ...args],
      env: { PATCHLOOP_TEST_EFFECTS_URL: effects.url, PATCHLOOP_TEST_WORKER_NAME: name },
    });
    workers.push(worker);
    return worker;
  };
  return { effects, fake, client, taskQueue, toolQueue, start };
}
