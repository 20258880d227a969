import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { configFromEnvironment, createPatchloopWorker, type AgentDefinitionInput } from 'patchloop';
import { tools } from './tools.js';

/** The agents are data: the same file `patchloop worker --agents agents.json` reads. */
export const agents = JSON.parse(
  readFileSync(new URL('./agents.json', import.meta.url), 'utf8'),
) as AgentDefinitionInput[];

/**
 * A worker for this project's agents and tools. `config` comes from the environment (TEMPORAL_ADDRESS,
 * PATCHLOOP_TASK_QUEUE, OPENAI_API_KEY, OPENAI_BASE_URL, ...) unless a caller (the test) gives its own.
 */
export function startWorker(config = configFromEnvironment()) {
  return createPatchloopWorker({ config, agents, tools });
}

// `npm run worker` (tsx worker.ts): serve until Ctrl-C or SIGTERM, which stop the worker gracefully.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const worker = await startWorker();
  console.log(
    `worker ready: agents ${agents.map((agent) => agent.name).join(', ')}; tools ${tools.map((tool) => tool.name).join(', ')}`,
  );
  await worker.run();
}
