import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { configFromEnvironment, PatchloopClient, type RunHandle, type RunStatus } from 'patchloop';
import { ScriptedModel } from 'patchloop/testing';
import { COMMIT, script } from './deploy.script.js';
import { startWorker } from './worker.js';

// The agent, its tool and a real worker, offline: the model is the scripted one. It needs a Temporal
// server at TEMPORAL_ADDRESS (localhost:7233 by default: `npx patchloop server` starts one).
let model: ScriptedModel;
let client: PatchloopClient;
let stop: () => Promise<void>;

before(async () => {
  model = await ScriptedModel.start();
  // A task queue of its own, so other workers on the same server never take this test's runs.
  const config = {
    ...configFromEnvironment(),
    taskQueue: `deploy-test-${randomUUID()}`,
    openaiBaseUrl: model.url,
    openaiApiKey: 'offline',
  };
  const worker = await startWorker(config);
  const running = worker.run();
  client = await PatchloopClient.connect(config);
  stop = async () => {
    worker.shutdown();
    await running;
  };
});

after(async () => {
  await client?.close();
  await stop?.();
  await model?.close();
});

/** The run's status once it waits with `tool` (checked every 100 ms for at most a minute). */
async function waitingWith(run: RunHandle, tool: 'sleep' | 'wait_for_event'): Promise<RunStatus> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await delay(100)) {
    const status = await run.status();
    if (status.state === 'waiting' && status.waiting?.some((wait) => wait.tool === tool)) return status;
    assert.ok(['running', 'waiting'].includes(status.state), `the run is ${status.state}, not waiting with ${tool}`);
  }
  throw new Error(`the run did not wait with ${tool} within a minute`);
}

test('the watcher waits for the build, sleeps between checks of the deploy, and reports once it is green', async () => {
  model.use(script);
  const run = await client.start({ agent: 'deploy-watcher', input: 'Watch the deploy of the next build.' });
  // It waits for the build event: no activity, no worker slot while it waits.
  const waiting = await waitingWith(run, 'wait_for_event');
  assert.deepEqual(
    waiting.waiting?.map((wait) => [wait.tool, wait.event]),
    [['wait_for_event', 'build']],
  );
  const delivered = await run.deliverEvent('build', { commit: COMMIT }, { key: `build-${COMMIT}` });
  assert.deepEqual(delivered, { accepted: true, duplicate: false, taken_by_wait: true, held: 0 });
  // Between two checks it sleeps, and says why.
  const sleeping = await waitingWith(run, 'sleep');
  assert.match(sleeping.waiting?.[0]?.reason ?? '', /^the deploy of abc123 is rolling out \([12]\/3\)$/);

  const result = await run.result();
  assert.equal(result.status, 'completed');
  assert.equal(result.answer, 'The deploy of abc123 is green: all 3 instances are healthy after 3 checks.');
  // The tools the model called, in order: the wait for the build, then three checks with a sleep between two.
  const calls = result.transcript.flatMap((message) =>
    ((message.tool_calls ?? []) as Array<{ function: { name: string } }>).map((call) => call.function.name),
  );
  assert.deepEqual(calls, ['wait_for_event', 'deploy_status', 'sleep', 'deploy_status', 'sleep', 'deploy_status']);
  model.assertDone();
});
