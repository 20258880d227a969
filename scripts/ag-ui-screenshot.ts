/**
 * `npm run screenshots:ag-ui`: examples/ag-ui-chat in a real browser (Debian's Chromium through
 * playwright-core), asked a question and then to pay, at its approval card, into
 * docs/images/ag-ui-chat.png. Everything is local: a dev server, a worker in this process, the fake
 * model, the gateway and the page's server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchWorld } from '../bench/world';
import { callTools, reply, toolCall } from '../src/fake-model/steps';
import { createPatchloopGateway, listen } from '../src/gateway/gateway';
import { createKey } from '../src/gateway/keys';
import { ask, startChatPage } from '../support/ag-ui-chat';
import { scriptsByAgent } from '../support/agent-scripts';
import { launchBrowser } from '../support/browser';
import { citiesWorld } from '../support/gateway-world';

async function main(): Promise<void> {
  const { agents, tools } = citiesWorld();
  const script = scriptsByAgent({
    assistant: {
      instructions: agents[0]!.instructions!,
      steps: [
        reply('Paris is the capital of France, on the Seine.'),
        callTools([toolCall('call_pay', 'transfer', { to: 'Ada', amount: 20 })]),
      ],
    },
  });
  const world = await startBenchWorld(script.responder, { agents, tools });
  const client = world.client;
  const scratch = mkdtempSync(join(tmpdir(), 'patchloop-ag-ui-screenshot-'));
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
    const folder = join(__dirname, '..', 'docs', 'images');
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
    await world.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
