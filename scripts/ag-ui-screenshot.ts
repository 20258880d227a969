/**
 * `npm run screenshots:ag-ui`: examples/ag-ui-chat in a real browser (Debian's Chromium through
 * playwright-core), asked a question and then to pay, at its approval card, into
 * docs/images/ag-ui-chat.png. Everything is local: a dev server, a worker in this process, the fake
 * model, the gateway and the page's server.
 */
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment, withOfflineModel } from '../src/config/environment';
import { FakeModelServer } from '../src/fake-model/server';
import { callTools, reply, toolCall } from '../src/fake-model/steps';
import { createPatchloopGateway, listen } from '../src/gateway/gateway';
import { createKey } from '../src/gateway/keys';
import { createPatchloopWorker } from '../src/worker/create-worker';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { ask, startChatPage } from '../support/ag-ui-chat';
import { launchBrowser } from '../support/browser';
import { citiesWorld } from '../support/gateway-world';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const folder = join(__dirname, '..', 'docs', 'images');
  mkdirSync(folder, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), 'patchloop-ag-ui-screenshot-'));
  const server = await startDevServer({ port: await freePort(), dbFile: join(scratch, 'temporal.db') });
  const fake = await FakeModelServer.start({
    script: [
      reply('Paris is the capital of France, on the Seine.'),
      callTools([toolCall('call_pay', 'transfer', { to: 'Ada', amount: 20 })]),
    ],
  });
  const config = withOfflineModel(
    { ...configFromEnvironment({}), temporalAddress: server.address, taskQueue: 'patchloop-ag-ui-screenshot' },
    fake.url,
    'fake-model',
  );
  const { agents, tools } = citiesWorld();
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createPatchloopWorker({ connection, config, agents, tools });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), config);
  const keysFile = join(scratch, 'keys.json');
  const key = createKey(keysFile, 'screenshots').key;
  const gateway = await listen(
    createPatchloopGateway({ client, keysFile, agents, log: () => undefined }).app,
    '127.0.0.1',
    0,
  );
  const chat = await startChatPage(gateway.url, key);
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 640 }, deviceScaleFactor: 1 });
    await page.goto(chat.url);
    await ask(page, 'What is Paris?', { answer: 'Paris is the capital' });
    await ask(page, 'Please pay Ada 20 for the tour.', 'approval');
    await page.screenshot({ path: join(folder, 'ag-ui-chat.png') });
    console.log('docs/images/ag-ui-chat.png');
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await browser.close();
    await chat.stop();
    await gateway.close();
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
