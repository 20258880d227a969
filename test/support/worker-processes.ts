import { randomUUID } from 'node:crypto';
import type { FakeModelServer } from '../../src/fake-model/server';
import type { AgentDefinitionInput } from '../../src/runtime';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';
import { clientOn, temporalAddress } from './temporal';

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
