import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AgentDefinition } from '../../runtime';
import { configFromEnvironment, connectionOptions, type PatchloopConfig } from '../../config/environment';
import { createPatchloopWorker, workerRedactor } from '../../worker/create-worker';
import { RedactingLogger } from '../../worker/redaction';
import { tracingFromEnvironment } from '../../worker/tracing';
import { assistantAgent, carefulAssistantAgent } from '../../agents/assistant';
import { demoModel } from '../../fake-model/demo-model';
import { FakeModelServer } from '../../fake-model/server';
import { CliError } from '../errors';
import { parseCommand } from '../arguments';

export const WORKER_SYNTAX = {
  usage: 'patchloop worker [--agents FILE.json] [--fake-model] [--verbose]',
  summary:
    'A worker serving the example agents (or the agents in FILE) until Ctrl-C. It needs a provider (OPENAI_API_KEY or OPENAI_BASE_URL), or --fake-model for the offline scripted model the demo uses.',
  options: { agents: { type: 'string' }, 'fake-model': { type: 'boolean' }, verbose: { type: 'boolean' } },
  positionals: [],
} as const;

/**
 * Runs a worker until SIGINT/SIGTERM, then shuts down gracefully (Temporal's runtime handles the
 * signals): running activities are cancelled as a shutdown, so their phases retry on another worker.
 */
export async function workerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, WORKER_SYNTAX);
  const environment = configFromEnvironment();
  // Offline by choice, never by surprise: no provider and no --fake-model is an error, not api.openai.com.
  if (!values['fake-model'] && !environment.openaiApiKey && !environment.openaiBaseUrl)
    throw new CliError(
      "no model provider configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible provider), or start 'npx patchloop worker --fake-model' for the offline scripted model the demo uses",
      'NoProvider',
    );
  // Worker log lines (activity failures among them) pass through the same redaction as failures. Quiet
  // by default: INFO (webpack's bundle statistics among it) with --verbose.
  Runtime.install({
    logger: new RedactingLogger(new DefaultLogger(values.verbose ? 'INFO' : 'WARN'), workerRedactor(environment)),
  });
  const agents = values.agents
    ? z.array(AgentDefinition).parse(JSON.parse(await readFile(values.agents, 'utf8')))
    : [assistantAgent, carefulAssistantAgent];
  const connection = await connectWorker(environment);
  const fake = values['fake-model'] ? await FakeModelServer.start({ responder: demoModel }) : undefined;
  const config = fake
    ? { ...environment, openaiBaseUrl: fake.url, openaiApiKey: 'offline', model: 'patchloop-demo-model' }
    : environment;
  const tracing = tracingFromEnvironment();
  try {
    const worker = await createPatchloopWorker({ connection, config, agents, ...(tracing ? { tracing } : {}) });
    if (worker.searchAttributes.registered.length > 0)
      print(
        `registered search attributes ${worker.searchAttributes.registered.join(', ')} on namespace ${config.namespace}`,
      );
    print(
      `worker polling task queue '${config.taskQueue}' on ${config.temporalAddress} (namespace ${config.namespace}); ` +
        `agents: ${agents.map((agent) => agent.name).join(', ')}; ` +
        (fake
          ? 'model: the offline scripted demo model (--fake-model)'
          : `provider: ${config.openaiBaseUrl ?? 'api.openai.com'}, model ${config.model}`),
    );
    await worker.run();
    print('worker stopped');
  } finally {
    await connection.close();
    await fake?.close();
    await tracing?.shutdown();
  }
  return undefined;
}

async function connectWorker(config: PatchloopConfig): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(connectionOptions(config));
  } catch (error) {
    throw new CliError(
      `cannot reach Temporal at ${config.temporalAddress} (${(error as Error).message}). Start a dev server with 'npx patchloop server', or set TEMPORAL_ADDRESS.`,
      'ConnectionError',
    );
  }
}
