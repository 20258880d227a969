/**
 * `npm run screenshots`: pictures of the console in a real browser (Debian's Chromium through
 * playwright-core) into docs/images/: the run list, a finished run with a tool call unfolded, a run
 * waiting for approval, and a run whose model is writing. Everything is local: a dev server, a worker
 * in this process and the fake model.
 */
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIST_STATUSES } from '../src/cli/syntax';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment, withOfflineModel } from '../src/config/environment';
import { startConsole } from '../src/console/server';
import { FakeModelServer } from '../src/fake-model/server';
import { callTools, reply, toolCall as call, withUsage as usage } from '../src/fake-model/steps';
import type { AgentDefinitionInput } from '../src/runtime';
import { addTool, waitTool } from '../src/tools/examples';
import { createPatchloopWorker } from '../src/worker/create-worker';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { scriptsByAgent } from '../support/agent-scripts';
import { launchBrowser } from '../support/browser';

const TOKEN = 'screenshots-only-token-0123456789';
const prices = { input_per_million: 0.15, output_per_million: 0.6 };
const agents: AgentDefinitionInput[] = [
  {
    name: 'researcher',
    instructions: 'You research questions and have the clerk file the answers.',
    tools: ['add'],
    subagents: ['clerk'],
    context: { window_tokens: 8000 },
    budget: { max_llm_calls: 12, max_cost_usd: 0.01, prices },
  },
  { name: 'clerk', instructions: 'You file reports.' },
  {
    name: 'operator',
    instructions: 'You operate machines, carefully.',
    tools: ['add', 'wait'],
    needs_approval: ['wait'],
    context: { window_tokens: 8000 },
    budget: { max_total_tokens: 6000, prices },
  },
];
const story =
  'Transformers read a whole sequence at once. Each token looks at every other token through attention, ' +
  'weighs what matters, and passes a richer version of itself to the next layer. Stack enough layers and ';

const scripts = scriptsByAgent({
  researcher: {
    instructions: 'You research questions and have the clerk file the answers.',
    steps: [
      callTools([call('call_add', 'add', { a: 1234, b: 4321 })], usage(412, 24)),
      callTools([call('call_file', 'clerk', { input: 'File this: 1234 + 4321 = 5555.' })], usage(498, 31)),
      reply('1234 + 4321 = 5555, and the clerk has filed it under arithmetic.', usage(560, 22)),
      reply(
        story.split(' ').map((word) => `${word} `),
        { firstChunkDelayMs: 200, chunkDelayMs: 180, ...usage(300, 80) },
      ),
    ],
  },
  clerk: { instructions: 'You file reports.', steps: [reply('Filed under arithmetic, report #42.', usage(120, 12))] },
  operator: {
    instructions: 'You operate machines, carefully.',
    steps: [
      callTools([call('call_sum', 'add', { a: 40, b: 2 })], usage(380, 20)),
      callTools([call('call_cool', 'wait', { seconds: 90 })], usage(450, 25)),
    ],
  },
});

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const folder = join(__dirname, '..', 'docs', 'images');
  mkdirSync(folder, { recursive: true });
  const server = await startDevServer({
    port: await freePort(),
    dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-screenshots-')), 'temporal.db'),
  });
  const fake = await FakeModelServer.start({ responder: scripts.responder });
  const config = withOfflineModel(
    { ...configFromEnvironment({}), temporalAddress: server.address, taskQueue: 'patchloop-screenshots' },
    fake.url,
    'fake-model',
  );
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createPatchloopWorker({ connection, config, agents, tools: [addTool, waitTool] });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), config);
  const consoleServer = await startConsole({
    client,
    host: '127.0.0.1',
    port: 0,
    access: { token: TOKEN, loopbackBind: true },
    temporalLink: (id) => `http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(id)}`,
    states: LIST_STATUSES,
  });
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
    await page.goto(`${consoleServer.url}/login?token=${TOKEN}`);
    const finished = await client.start({ agent: 'researcher', input: 'What is 1234 + 4321? Have it filed.' });
    await finished.result();
    const waiting = await client.start({ agent: 'operator', input: 'Add 40 and 2, then let the machine cool.' });
    while ((await waiting.status()).pending_approvals.length === 0) await new Promise((r) => setTimeout(r, 100));
    await waiting.submitUserMessage('Keep it under two minutes, please.');

    await page.goto(consoleServer.url);
    await page.locator(`#run-rows tr[data-workflow-id="${waiting.workflowId}"]`).waitFor();
    await page.locator(`#run-rows tr[data-workflow-id="${finished.workflowId}"]`).waitFor();
    await page.screenshot({ path: join(folder, 'console-runs.png') });
    console.log('docs/images/console-runs.png');

    await page.goto(`${consoleServer.url}/runs/${encodeURIComponent(finished.workflowId)}`);
    await page.locator('details.tool-call[data-tool-call-id=call_add] summary').click();
    await page.screenshot({ path: join(folder, 'console-finished.png'), fullPage: true });
    console.log('docs/images/console-finished.png');

    await page.goto(`${consoleServer.url}/runs/${encodeURIComponent(waiting.workflowId)}`);
    await page.locator('#approvals li[data-tool-call-id=call_cool]').waitFor();
    await page.locator('details.tool-call[data-tool-call-id=call_sum] summary').click();
    await page.screenshot({ path: join(folder, 'console-run.png'), fullPage: true });
    console.log('docs/images/console-run.png');

    const writing = await client.start({ agent: 'researcher', input: 'How do transformers work?' });
    await page.goto(`${consoleServer.url}/runs/${encodeURIComponent(writing.workflowId)}`);
    await page.locator('#live:not([hidden])').waitFor();
    while (((await page.locator('#live .tokens').textContent()) ?? '').length < 120)
      await new Promise((r) => setTimeout(r, 100));
    await page.screenshot({ path: join(folder, 'console-live.png') });
    console.log('docs/images/console-live.png');
    await writing.result();
    await waiting.abort('screenshots taken');
    await waiting.result();
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await browser.close();
    await consoleServer.close();
    worker.shutdown();
    await running;
    await client.close();
    await connection.close();
    await fake.close();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
