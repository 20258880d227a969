import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { assistantAgent, carefulAssistantAgent } from '../agents/assistant';
import { AgentDefinition, type AgentDefinitionInput } from '../runtime';

/** The agents of `--agents FILE` (a JSON array of definitions), or the example agents without it. */
export async function agentsFromFile(file: string | undefined): Promise<AgentDefinitionInput[]> {
  return file
    ? z.array(AgentDefinition).parse(JSON.parse(await readFile(file, 'utf8')))
    : [assistantAgent, carefulAssistantAgent];
}
