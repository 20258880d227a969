import { Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { configFromEnvironment, type PatchloopConfig } from '../../src/config/environment';
import { FakeModelServer } from '../../src/fake-model/server';
import { reply } from '../../src/fake-model/steps';
import { createPatchloopWorker, workflowBundleOptions } from '../../src/worker/create-worker';
import { temporalAddress, workflowBundle } from '../support/temporal';
import { replyReceived } from '../support/wait';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The workflow code of a later build: one prompt constant of the compile layer changed. */
function laterBuild() {
  return bundleWorkflowCode({
    ...workflowBundleOptions(),
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => {
      config.module?.rules?.push({
        test: /render-llm-input\.ts$/,
        enforce: 'pre',
        use: [{ loader: join(__dirname, '..', 'support', 'changed-prompt-loader.cjs') }],
      });
      return config;
    },
  });
}

it('a deploy that changes the compiled request mid-call does not fail the run: the retry sends the new request', async () => {
  // Both builds first: bundling also installs the test runtime, before any connection exists.
  const current = await workflowBundle();
  const later = await laterBuild();
  const fake = await FakeModelServer.start({
    script: [{ kind: 'hang', chunks: ['thinking '] }, reply('after the deploy')],
  });
  cleanups.push(() => fake.close());
  const config: PatchloopConfig = {
    ...configFromEnvironment({}),
    temporalAddress: temporalAddress(),
    taskQueue: `deploy-${randomUUID()}`,
    openaiBaseUrl: fake.url,
    openaiApiKey: 'test-key',
    model: 'fake-model',
  };
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  cleanups.push(() => connection.close());
  const client = PatchloopClient.on(await Connection.connect({ address: config.temporalAddress }), config);
  cleanups.push(() => client.close());
  const start = async (bundle: Awaited<ReturnType<typeof workflowBundle>>) => {
    const worker = await createPatchloopWorker({
      connection,
      config,
      workflowBundle: bundle,
      workerOptions: { stickyQueueScheduleToStartTimeout: '1s' },
    });
    const running = worker.run();
    return async () => {
      worker.shutdown();
      await running;
    };
  };
  const stopFirst = await start(current);
  const run = await client.start({ agent: 'assistant', input: 'hello' });
  await fake.waitForRequests(1);
  await replyReceived(run, 'thinking '.length);
  // The deploy: the old build stops (its call in flight is retried), the new build takes over.
  await stopFirst();
  cleanups.push(await start(later));
  const result = await run.result();
  expect(result.status).toBe('completed');
  expect(result.answer).toBe('after the deploy');
  const [before, after] = fake.requests.map((request) => JSON.stringify(request.body));
  expect(before).not.toContain('Deployed later');
  expect(after).toContain('<rule>Deployed later: answer briefly.</rule>');
  // Apart from the changed constant, the new build sent the same request.
  expect(after!.replace('\\n<rule>Deployed later: answer briefly.</rule>', '')).toBe(before);
  fake.assertDone();
});
