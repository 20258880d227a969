import { execFile } from 'node:child_process';
import { Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  makeTelemetryFilterString,
  NativeConnection,
  Runtime,
} from '@temporalio/worker';
import { capturingLogger } from './captured-logs';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { FakeModelServer, type FakeModelOptions } from '../../src/fake-model/server';
import type { AgentDefinitionInput } from '../../src/runtime';
import type { Guardrail } from '../../src/tools/define-guardrail';
import type { Tool } from '../../src/tools/define-tool';
import { configFromEnvironment, type PatchloopConfig } from '../../src/config/environment';
import { createPatchloopWorker, workflowBundleOptions, type PatchloopWorker } from '../../src/worker/create-worker';
import { findTemporalCli } from '../../src/worker/temporal-cli';
import { readBundleFile } from '../../src/worker/bundle-file';

let runtimeInstalled = false;
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  // Core's own lines (failing workflow tasks, payload warnings) are forwarded to the same held-back log.
  Runtime.install({
    logger: capturingLogger,
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });
}

let bundle: Promise<{ code: string }> | undefined;
/**
 * The workflow bundle: the one the e2e set-up wrote for the whole run, or else (a unit test) one built
 * once per test file (bundling takes seconds).
 */
export function workflowBundle(): Promise<{ code: string }> {
  quietRuntime();
  const shared = process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE'];
  bundle ??= shared
    ? readBundleFile(shared).then(({ code }) => ({ code }))
    : bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
  return bundle;
}

export function temporalAddress(): string {
  return inject('temporalAddress');
}

export interface TestWorld {
  config: PatchloopConfig;
  fake: FakeModelServer;
  client: PatchloopClient;
  worker: PatchloopWorker;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface WorldOptions {
  fake?: FakeModelOptions;
  /** Settings beyond the defaults (payload storage, ...). */
  config?: Partial<PatchloopConfig>;
  agents?: AgentDefinitionInput[];
  tools?: Tool[];
  guardrails?: Guardrail[];
}

/**
 * A fake model, an in-process worker on its own task queue, and a client: one per test, or one per file
 * (the `startWorld` and `world` fixtures of ./fixtures.ts).
 */
export async function startWorld(options: WorldOptions = {}): Promise<TestWorld> {
  quietRuntime();
  const fake = await FakeModelServer.start(options.fake);
  const config: PatchloopConfig = {
    ...configFromEnvironment({}),
    temporalAddress: temporalAddress(),
    taskQueue: `test-${randomUUID()}`,
    openaiBaseUrl: fake.url,
    openaiApiKey: 'test-key',
    model: 'fake-model',
    ...options.config,
  };
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await createPatchloopWorker({
    connection,
    config,
    workflowBundle: await workflowBundle(),
    ...(options.agents ? { agents: options.agents } : {}),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.guardrails ? { guardrails: options.guardrails } : {}),
  });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: config.temporalAddress }), config);
  let stopped = false;
  const stopWorker = async () => {
    if (stopped) return;
    stopped = true;
    worker.shutdown();
    await running;
  };
  let closed: Promise<void> | undefined;
  return {
    config,
    fake,
    client,
    worker,
    stopWorker,
    // Once: the test that closes its world early leaves it to its fixture too.
    close: () =>
      (closed ??= (async () => {
        await stopWorker();
        await connection.close();
        await client.close();
        await fake.close();
      })()),
  };
}

/**
 * The plain `temporal` CLI against the test's server, as other services use it. Asynchronous: a worker
 * in this process must keep working while the CLI waits.
 */
export function temporalCli(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const cli = findTemporalCli();
  if (!cli) throw new Error('temporal CLI not found (run bash scripts/setup.sh)');
  return new Promise((resolve) => {
    execFile(cli, [...args, '--address', temporalAddress()], { encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ status: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/**
 * The executions a visibility query finds, as `temporal workflow list --query Q --output json` lists them
 * (the way an operator asks): each with its `execution.workflowId`.
 */
export async function listedWorkflows(query: string): Promise<Array<{ execution: { workflowId: string } }>> {
  const listed = await temporalCli('workflow', 'list', '--query', query, '--output', 'json');
  if (listed.status !== 0) throw new Error(`temporal workflow list failed: ${listed.stderr}`);
  return listed.stdout.trim() === '' ? [] : (JSON.parse(listed.stdout) as Array<{ execution: { workflowId: string } }>);
}

/** A client of the test's server on its own task queue (for tests whose workers are processes). */
export async function clientOn(taskQueue: string): Promise<PatchloopClient> {
  return PatchloopClient.on(await Connection.connect({ address: temporalAddress() }), {
    ...configFromEnvironment({}),
    taskQueue,
  });
}
