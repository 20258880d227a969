import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type WorkerOptions } from '@temporalio/worker';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchloopClient } from '../src/client/patchloop-client';
import { FakeModelServer, type Responder } from '../src/fake-model/server';
import { NO_BOUNDS, type AgentDefinitionInput } from '../src/runtime';
import { assistantAgent } from '../src/agents/assistant';
import { configFromEnvironment, withOfflineModel, type PatchloopConfig } from '../src/config/environment';
import type { Tool } from '../src/tools/define-tool';
import { createPatchloopWorker, type PatchloopWorker } from '../src/worker/create-worker';
import { startDevServer, type DevServer } from '../src/worker/temporal-cli';
import { freePort } from '../src/worker/free-port';

let runtimeInstalled = false;

/** Benchmarks measure long runs: their agents have no bound on calls or tokens (docs/budgets.md). */
function unbounded(agent: AgentDefinitionInput): AgentDefinitionInput {
  return { ...agent, budget: { ...NO_BOUNDS, ...agent.budget } };
}

/** A dev server, a fake model and an in-process worker for a benchmark run. */
export interface BenchWorld {
  server: DevServer;
  fake: FakeModelServer;
  worker: PatchloopWorker;
  client: PatchloopClient;
  close(): Promise<void>;
}

export async function startBenchWorld(
  responder: Responder,
  options: {
    agents?: AgentDefinitionInput[];
    tools?: Tool[];
    dynamicConfig?: Record<string, number>;
    /** The dev server as `temporal server start-dev` ships it (not the embedded default's settings). */
    stock?: boolean;
    keepBodies?: boolean;
    /** The fake model's context window (it refuses longer requests as OpenAI does). */
    windowTokens?: number;
    config?: Partial<PatchloopConfig>;
    workerOptions?: Partial<WorkerOptions>;
  } = {},
): Promise<BenchWorld> {
  // One runtime per process: several worlds may run one after the other.
  if (!runtimeInstalled)
    Runtime.install({ logger: new DefaultLogger((process.env['BENCH_LOG_LEVEL'] as 'WARN' | undefined) ?? 'ERROR') });
  runtimeInstalled = true;
  const server = await startDevServer({
    port: await freePort(),
    dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-bench-')), 'temporal.db'),
    ...(options.dynamicConfig ? { dynamicConfig: options.dynamicConfig } : {}),
    ...(options.stock ? { stock: true } : {}),
  });
  const fake = await FakeModelServer.start({
    responder,
    keepBodies: options.keepBodies ?? true,
    ...(options.windowTokens ? { windowTokens: options.windowTokens } : {}),
  });
  const config = {
    ...withOfflineModel(
      { ...configFromEnvironment({}), temporalAddress: server.address, taskQueue: 'bench' },
      fake.url,
      'fake-model',
    ),
    ...options.config,
  };
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createPatchloopWorker({
    connection,
    config,
    agents: (options.agents ?? [assistantAgent]).map(unbounded),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.workerOptions ? { workerOptions: options.workerOptions } : {}),
  });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), config);
  return {
    server,
    fake,
    worker,
    client,
    close: async () => {
      worker.shutdown();
      await running;
      await client.close();
      await connection.close();
      await fake.close();
      await server.stop();
    },
  };
}
