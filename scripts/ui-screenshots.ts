/**
 * `npm run ui:screenshots`: what the Temporal web UI shows of patchloop runs, seen in a real browser.
 * Starts a dev server with its UI, a worker on the offline demo model, makes three runs (completed,
 * aborted, waiting for approval), and takes headless Chromium screenshots of the workflow list, the list
 * filtered on patchloop's search attributes, and a finished run's page into .patchloop/screenshots/. Needs `chromium` (Debian: apt-get install chromium).
 */
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { assistantAgent, carefulAssistantAgent } from '../src/agents/assistant';
import { PatchloopClient } from '../src/client/patchloop-client';
import { configFromEnvironment, withOfflineModel } from '../src/config/environment';
import { demoModel } from '../src/fake-model/demo-model';
import { FakeModelServer } from '../src/fake-model/server';
import { createPatchloopWorker } from '../src/worker/create-worker';
import { freePort } from '../src/worker/free-port';
import { startDevServer } from '../src/worker/temporal-cli';
import { chromiumPath } from '../support/browser';

/** Asynchronous: the worker runs in this process and must answer the UI's queries meanwhile. */
async function screenshot(url: string, file: string): Promise<void> {
  const browser = chromiumPath();
  const result = await new Promise<{ status: number; stderr: string }>((resolve) =>
    execFile(
      browser,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--hide-scrollbars',
        '--window-size=1600,1000',
        '--virtual-time-budget=20000',
        `--screenshot=${file}`,
        url,
      ],
      { encoding: 'utf8', timeout: 120_000 },
      (error, _stdout, stderr) => resolve({ status: error ? 1 : 0, stderr }),
    ),
  );
  // A page that keeps polling (a running workflow) may end the virtual time budget without a file.
  if (result.status !== 0 || !existsSync(file))
    throw new Error(`chromium took no screenshot of ${url}: ${result.stderr}`);
  console.log(`${file}  <- ${url}`);
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const folder = join('.patchloop', 'screenshots');
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  const server = await startDevServer({
    port: await freePort(),
    uiPort: await freePort(),
    headless: false,
    dbFile: join(folder, 'temporal.db'),
  });
  const fake = await FakeModelServer.start({ responder: demoModel });
  const config = withOfflineModel(
    { ...configFromEnvironment({}), temporalAddress: server.address, taskQueue: 'patchloop-ui' },
    fake.url,
    'patchloop-demo-model',
  );
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createPatchloopWorker({ connection, config, agents: [assistantAgent, carefulAssistantAgent] });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), config);
  try {
    const done = await client.start({ agent: 'assistant', input: "What is 2 + 3, and repeat 'ha' 3 times?" });
    await done.result();
    const aborted = await client.start({ agent: 'assistant', input: 'Please wait 30 s, then tell me you are done.' });
    while (!(await aborted.status()).events.some((event) => event.event_type === 'tool_call_start'))
      await new Promise((resolve) => setTimeout(resolve, 100));
    await aborted.abort('operator');
    await aborted.result();
    const waiting = await client.start({ agent: 'careful-assistant', input: "Repeat 'ok' 2 times." });
    while ((await waiting.status()).state !== 'awaiting_approval')
      await new Promise((resolve) => setTimeout(resolve, 100));
    const ui = `${server.uiUrl}/namespaces/${config.namespace}/workflows`;
    await screenshot(ui, join(folder, 'list.png'));
    // The list filtered on the search attributes the runs keep current.
    await screenshot(
      `${ui}?query=${encodeURIComponent("PatchloopStatus='awaiting_approval' AND PatchloopAgent='careful-assistant'")}`,
      join(folder, 'list-awaiting-approval.png'),
    );
    await screenshot(`${ui}/${done.workflowId}`, join(folder, 'run.png'));
    // (A running workflow's own page polls for ever: headless Chromium takes no screenshot of it.)
    await waiting.abort('screenshots taken');
  } finally {
    worker.shutdown();
    await running;
    await client.close();
    await connection.close();
    await fake.close();
    await server.stop();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
