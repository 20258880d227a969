// bench:peers runner: node run.mjs <address> <task queue> <iterations> <model url>.
// Prints {"workflowId","runId"} once the run is done.
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const require = createRequire(import.meta.url);
const [address, taskQueue, iterations, modelUrl] = process.argv.slice(2);
Runtime.install({ logger: new DefaultLogger('ERROR') });
const modelProvider = createOpenAICompatible({ name: 'fake', baseURL: modelUrl, apiKey: 'bench' });
const worker = await Worker.create({
  connection: await NativeConnection.connect({ address }),
  taskQueue,
  workflowsPath: require.resolve('./workflows.mjs'),
  plugins: [new AiSdkPlugin({ modelProvider })],
  activities: { repeat: async ({ text, times }) => text.repeat(times) },
});
const running = worker.run();
const client = new Client({ connection: await Connection.connect({ address }) });
const handle = await client.workflow.start('aiSdkAgent', {
  taskQueue,
  workflowId: `ai-sdk-${Date.now()}`,
  args: [Number(iterations)],
});
await handle.result();
console.log(JSON.stringify({ workflowId: handle.workflowId, runId: handle.firstExecutionRunId }));
worker.shutdown();
await running;
process.exit(0);
