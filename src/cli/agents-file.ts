import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { assistantAgent, carefulAssistantAgent } from '../agents/assistant';
import { parseAgentDefinition } from '../agents/registry';
import { CliErrorType } from '../common/cli-error-types';
import { ScheduleDefinition, type AgentDefinitionInput } from '../runtime';
import { CliError } from './errors';

/**
 * The agents of `--agents FILE`, or the example agents without it. The file is a JSON array of agent
 * definitions, or an object `{"agents": [...], "schedules": [...]}`: its schedules are applied by
 * `patchloop schedule apply` only, never by a worker's start. What is wrong with the file (it cannot be
 * read, is not JSON, or a definition does not parse) is one line that names the file.
 */
export async function agentsFromFile(file: string | undefined): Promise<AgentDefinitionInput[]> {
  if (!file) return [assistantAgent, carefulAssistantAgent];
  const refuse = refusal(file);
  return agentsOf(await readAgentsFile(file), file).map((input: unknown, index) => {
    const parsed = parseAgentDefinition(input, `#${index + 1}`);
    if ('problem' in parsed) throw refuse(parsed.problem);
    return parsed.agent;
  });
}

/** The `schedules` an agents file declares (none in a file that is an array of agents). */
export async function schedulesFromFile(file: string): Promise<ScheduleDefinition[]> {
  const refuse = refusal(file);
  const value = await readAgentsFile(file);
  agentsOf(value, file);
  const schedules = Array.isArray(value) ? [] : ((value as { schedules?: unknown }).schedules ?? []);
  if (!Array.isArray(schedules))
    throw refuse('schedules must be a JSON array of schedules (schemas/schedule-definition.schema.json)');
  return schedules.map((input: unknown, index) => {
    const parsed = ScheduleDefinition.safeParse(input);
    if (!parsed.success) throw refuse(`schedule #${index + 1}: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  });
}

function refusal(file: string): (problem: string) => CliError {
  return (problem) => new CliError(`agents file ${file}: ${problem}`, CliErrorType.BadConfiguration);
}

async function readAgentsFile(file: string): Promise<unknown> {
  const refuse = refusal(file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw refuse(code === 'ENOENT' ? 'no such file' : (error as Error).message);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw refuse(`not valid JSON: ${(error as Error).message}`);
  }
}

/** The agent definitions of a parsed file: the array itself, or its `agents`. */
function agentsOf(value: unknown, file: string): unknown[] {
  if (Array.isArray(value)) return value;
  const agents = (value as { agents?: unknown } | null)?.agents;
  if (value !== null && typeof value === 'object' && Array.isArray(agents)) return agents;
  throw refusal(file)(
    'must be a JSON array of agent definitions (schemas/agent-definition.schema.json), or an object with "agents" and "schedules"',
  );
}
