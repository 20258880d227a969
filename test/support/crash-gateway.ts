import { randomUUID } from 'node:crypto';
import { FakeModelServer } from '../../src/fake-model/server';
import { reply } from '../../src/fake-model/steps';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import type { AgentDefinitionInput } from '../../src/runtime';
import { spawnWorker } from '../../support/worker-process';
import { clientOn, temporalAddress } from './temporal';

/**
 * A gateway on a task queue of its own whose worker is a process a test kills (-9) mid-answer: the
 * model's first attempt streams "partial " and hangs, the retry answers `answer`. The agent has no
 * tools, and a short heartbeat timeout, so the retry comes soon after the kill.
 */
export async function crashGateway(keysFile: string, agent: AgentDefinitionInput, answer: string | string[]) {
  const fake = await FakeModelServer.start({ script: [{ kind: 'hang', chunks: ['partial '] }, reply(answer)] });
  const taskQueue = `gateway-crash-${randomUUID()}`;
  const client = await clientOn(taskQueue);
  const agents = [{ ...agent, tools: [], needs_approval: [], limits: { heartbeat_timeout_seconds: 2 } }];
  const spawn = () => spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents });
  const workers = [await spawn()];
  const gateway = await listen(
    createPatchloopGateway({ client, keysFile, agents, log: () => undefined }).app,
    '127.0.0.1',
    0,
  );
  return {
    fake,
    client,
    url: gateway.url,
    /** Kills the worker (-9) and starts another. */
    killWorker: async () => {
      await workers[0]!.kill('SIGKILL');
      workers.push(await spawn());
    },
    close: async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
      await gateway.close();
      await client.close();
      await fake.close();
    },
  };
}
