import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { demoModel } from '../../fake-model/demo-model';
import { FakeModelServer } from '../../fake-model/server';
import { validateToolLinkage } from '../../context';
import { configFromEnvironment, withOfflineModel } from '../../config/environment';
import { assistantAgent, carefulAssistantAgent } from '../../agents/assistant';
import { createPatchloopWorker } from '../../worker/create-worker';
import { startDevServer } from '../../worker/temporal-cli';
import { followRun, textOutput } from '../../client/follow';
import { PatchloopClient } from '../../client/patchloop-client';
import { printOutcome } from './runs';
import { freePort } from '../../worker/free-port';
import { temporalCli } from './server';

type Print = (line: string) => void;
const write = (text: string) => void process.stdout.write(text);

/**
 * One command for the whole flow: a Temporal dev server (SQLite under .patchloop/, web UI), a worker,
 * and three runs of the example agents (one answered with tools, one aborted mid-tool, one whose tool
 * call waits for approval and is approved by the script). A real provider is
 * used when OPENAI_API_KEY or OPENAI_BASE_URL is set, else the built-in offline fake model.
 */
export async function demoCommand(_args: string[], print: Print): Promise<undefined> {
  // The demo handles Ctrl-C itself: one press stops worker, server and all, cleanly.
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  mkdirSync('.patchloop', { recursive: true });
  const env = configFromEnvironment();
  const port = await freePort();
  const server = await startDevServer({
    cli: await temporalCli(false, print),
    port,
    uiPort: await freePort(),
    headless: false,
    dbFile: join('.patchloop', 'demo.db'),
  });
  print(`Temporal dev server: ${server.address}, web UI: ${server.uiUrl}`);
  const offline = !env.openaiApiKey && !env.openaiBaseUrl;
  const fake = offline ? await FakeModelServer.start({ responder: demoModel }) : undefined;
  print(
    offline
      ? 'No OPENAI_API_KEY or OPENAI_BASE_URL set: using the built-in offline fake model.'
      : `Provider: ${env.openaiBaseUrl ?? 'api.openai.com'}, model ${env.model}`,
  );
  const served = { ...env, temporalAddress: server.address, taskQueue: 'patchloop-demo' };
  const config = fake ? withOfflineModel(served, fake.url, 'patchloop-demo-model') : served;
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createPatchloopWorker({ connection, config, agents: [assistantAgent, carefulAssistantAgent] });
  const running = worker.run();
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), config);
  try {
    print('\n== run 1: tools in parallel ==');
    const first = await client.start({ agent: 'assistant', input: "What is 2 + 3, and repeat 'ha' 3 times?" });
    printOutcome(await followRun(first, textOutput(write)), print);

    print('\n== run 2: aborted while a tool runs ==');
    const second = await client.start({ agent: 'assistant', input: 'Please wait 30 s, then tell me you are done.' });
    const following = followRun(second, textOutput(write));
    await waitUntil(async () =>
      (await second.status()).events.some(
        (event) => event.event_type === 'tool_call_start' || event.event_type === 'react_end',
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const abortedAt = Date.now();
    await second.abort('demo: operator abort');
    const result = await following;
    printOutcome(result, print);
    validateToolLinkage(result.transcript);
    print(
      `ended ${Date.now() - abortedAt} ms after the abort signal; the transcript is structurally valid (every tool call has its result)`,
    );

    print('\n== run 3: a tool call that waits for approval (the demo script approves it) ==');
    const third = await client.start({ agent: 'careful-assistant', input: "Repeat 'ok' 2 times." });
    const approved = await followRun(third, textOutput(write), {
      onEvent: async (event) => {
        if (event.event_type !== 'approval_requested') return;
        const waiting = await third.status();
        print(
          `  status: ${waiting.state}, pending: ${waiting.pending_approvals.map((entry) => `${entry.tool_name} ${JSON.stringify(entry.arguments)}`).join(', ')}`,
        );
        print(
          `  demo script: approving ${event.tool_call_id} (a person would: patchloop approve ${third.workflowId} ${event.tool_call_id})`,
        );
        await third.approve(event.tool_call_id, 'demo: auto-approved');
      },
    });
    printOutcome(approved, print);

    const links = [first, second, third].map(
      (run) => `  ${server.uiUrl}/namespaces/${config.namespace}/workflows/${run.workflowId}`,
    );
    if (process.stdout.isTTY) {
      print(`\nThe runs in the Temporal web UI (list: ${server.uiUrl}/namespaces/${config.namespace}/workflows):`);
      for (const link of links) print(link);
      print(
        `\nServer, worker and UI stay up until Ctrl-C. In another terminal:\n` +
          `  TEMPORAL_ADDRESS=${server.address} PATCHLOOP_TASK_QUEUE=${config.taskQueue} npx patchloop run assistant add 4 and 5 --follow\n` +
          `  TEMPORAL_ADDRESS=${server.address} npx patchloop list\n` +
          `patchloop's console shows these runs (transcripts, approvals, live tokens) at http://127.0.0.1:8300:\n` +
          `  TEMPORAL_ADDRESS=${server.address} PATCHLOOP_TASK_QUEUE=${config.taskQueue} npx patchloop console`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      print('stopping the demo ...');
    } else {
      print(
        '\nNot a terminal: the demo stops its server now, so its web UI links would be dead. Run `npm run demo` in a terminal to keep them up, or start a server of your own with `npx patchloop server`.',
      );
    }
  } finally {
    worker.shutdown();
    await running;
    await client.close();
    await connection.close();
    await fake?.close();
    await server.stop();
  }
  return undefined;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('timed out waiting for the run');
}
