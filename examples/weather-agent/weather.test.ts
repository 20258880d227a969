import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { configFromEnvironment, PatchloopClient } from 'patchloop';
import { ScriptedModel } from 'patchloop/testing';
import { noForecast, script } from './weather.script.js';
import { startWorker } from './worker.js';

// The agent, its tool and a real worker, offline: the model is the scripted one. It needs a Temporal
// server at TEMPORAL_ADDRESS (localhost:7233 by default: `npx patchloop server` starts one).
let model: ScriptedModel;
let client: PatchloopClient;
let stop: () => Promise<void>;

before(async () => {
  // One model for the file's tests: each test gives it the scripts it plays (model.use), and its
  // assertDone() answers for those only.
  model = await ScriptedModel.start();
  // A task queue of its own, so other workers on the same server never take this test's runs.
  const config = {
    ...configFromEnvironment(),
    taskQueue: `weather-test-${randomUUID()}`,
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

test('the forecaster calls the weather tool and answers from its result', async () => {
  model.use(script);
  const run = await client.start({ agent: 'forecaster', input: 'What is the weather in Paris?' });
  const result = await run.result();
  assert.equal(result.status, 'completed');
  assert.equal(result.answer, 'It is sunny in Paris today, 24 °C.');
  // The tool really ran: its result (as JSON) is in the transcript, as the model received it.
  const toolResults = result.transcript.filter((message) => message.role === 'tool');
  assert.deepEqual(
    toolResults.map((message) => JSON.parse(String(message.content))),
    ['sunny, 24 °C'],
  );
  model.assertDone();
});

test('one script plays any number of runs at once', async () => {
  model.use(script);
  const runs = await Promise.all(
    ['What is the weather in Paris?', 'Paris: will it be sunny?'].map((input) =>
      client.start({ agent: 'forecaster', input }),
    ),
  );
  const results = await Promise.all(runs.map((run) => run.result()));
  assert.deepEqual(
    results.map((result) => result.answer),
    ['It is sunny in Paris today, 24 °C.', 'It is sunny in Paris today, 24 °C.'],
  );
  model.assertDone();
});

test('a city without a forecast: the model says so', async () => {
  model.use(noForecast);
  const run = await client.start({ agent: 'forecaster', input: 'What is the weather in Reykjavik?' });
  const result = await run.result();
  assert.equal(result.answer, 'I have no forecast for Reykjavik today.');
  model.assertDone();
});
