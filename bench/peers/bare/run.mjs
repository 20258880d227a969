// bench:peers runner for the floor: node run.mjs <address> <task queue> <iterations> <model url>.
// The "model" activity posts to the fake model (so the harness times and counts every call the same way
// for every system), the tool activity returns 4 KB. Prints {"workflowId","runId"} when the run is done.
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

const require = createRequire(import.meta.url);

async function main() {
  const [address, taskQueue, iterations, modelUrl] = process.argv.slice(2);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const results = [];
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue,
    workflowsPath: require.resolve('./workflows.mjs'),
    activities: {
      async model(index) {
        // The floor's "model call": one plain request to the fake model, carrying the tool results so far.
        const response = await fetch(`${modelUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'go' }, ...results] }),
        });
        await response.text();
        return index;
      },
      async tool(index) {
        const content = 'abcdefghijklmnop'.repeat(256);
        results.push({ role: 'tool', tool_call_id: `call_${index}`, content });
        return content;
      },
    },
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address }) });
  const handle = await client.workflow.start('bareLoop', {
    taskQueue,
    workflowId: `bare-${Date.now()}`,
    args: [Number(iterations)],
  });
  await handle.result();
  console.log(JSON.stringify({ workflowId: handle.workflowId, runId: handle.firstExecutionRunId }));
  worker.shutdown();
  await running;
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
