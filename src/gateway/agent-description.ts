import type { AgentDefinitionInput } from '../runtime';

/** The first line of a text, at most `most` characters. */
function firstLine(text: string, most: number): string {
  const line = text.trim().split('\n')[0]?.trim() ?? '';
  return line.length > most ? `${line.slice(0, most - 1)}…` : line;
}

/**
 * What an agent does, in one line for a caller of another protocol (an A2A card's skill, an MCP tool's
 * description): the first line of its instructions, or its name.
 */
export function agentDescription(agent: AgentDefinitionInput): string {
  return firstLine(agent.instructions, 300) || `The patchloop agent ${agent.name}.`;
}
