import { readFile } from 'node:fs/promises';
import { assistantAgent, carefulAssistantAgent } from '../agents/assistant';
import { parseAgentDefinition } from '../agents/registry';
import { CliErrorType } from '../common/cli-error-types';
import type { AgentDefinitionInput } from '../runtime';
import { CliError } from './errors';

/**
 * The agents of `--agents FILE` (a JSON array of definitions), or the example agents without it. What
 * is wrong with the file (it cannot be read, is not JSON, or a definition does not parse) is one line
 * that names the file.
 */
export async function agentsFromFile(file: string | undefined): Promise<AgentDefinitionInput[]> {
  if (!file) return [assistantAgent, carefulAssistantAgent];
  const refuse = (problem: string) => new CliError(`agents file ${file}: ${problem}`, CliErrorType.BadConfiguration);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw refuse(code === 'ENOENT' ? 'no such file' : (error as Error).message);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw refuse(`not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(value))
    throw refuse('must be a JSON array of agent definitions (schemas/agent-definition.schema.json)');
  return value.map((input: unknown, index) => {
    const parsed = parseAgentDefinition(input, `#${index + 1}`);
    if ('problem' in parsed) throw refuse(parsed.problem);
    return parsed.agent;
  });
}
