import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AgentDefinition } from '../../runtime';
import { configFromEnvironment } from '../../config/environment';
import { createPatchloopWorker, workerRedactor } from '../../worker/create-worker';
import { RedactingLogger } from '../../worker/redaction';
import { assistantAgent } from '../../agents/assistant';
import { parseCommandArgs } from '../arguments';

const USAGE = 'patchloop worker [--agents FILE.json]';

/**
 * Runs a worker until SIGINT/SIGTERM, then shuts down gracefully (Temporal's runtime handles the
 * signals): running activities are cancelled as a shutdown, so their phases retry on another worker.
 */
export async function workerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommandArgs(args, { agents: { type: 'string' } }, USAGE);
  const config = configFromEnvironment();
  // Worker log lines (activity failures among them) pass through the same redaction as failures.
  Runtime.install({ logger: new RedactingLogger(new DefaultLogger('INFO'), workerRedactor(config)) });
  const agents = values.agents
    ? z.array(AgentDefinition).parse(JSON.parse(await readFile(values.agents, 'utf8')))
    : [assistantAgent];
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  try {
    const worker = await createPatchloopWorker({ connection, config, agents });
    print(
      `worker polling task queue '${config.taskQueue}' on ${config.temporalAddress} (namespace ${config.namespace}); ` +
        `agents: ${agents.map((agent) => agent.name).join(', ')}; provider: ${config.openaiBaseUrl ?? 'api.openai.com'}, model ${config.model}`,
    );
    await worker.run();
    print('worker stopped');
  } finally {
    await connection.close();
  }
  return undefined;
}
