import { buildToolPromptSpecs, type JsonObject, type Message, type PromptContract } from '../context';
import type { AgentSpec } from './agent';

/** The chat-agent preset of the prompt contract (spec 2.3): the instructions are base and explicit prompt. */
export function promptContractFor(agent: AgentSpec): PromptContract {
  return {
    base_instruction: agent.instructions,
    system_prompt: agent.instructions,
    tool_prompt_specs: buildToolPromptSpecs(agent.tool_descriptors),
    include_must_principles: true,
  };
}

/** Tool definitions in the chat-completions `tools` shape, with the JSON Schema zod produced. */
export function providerTools(agent: AgentSpec): JsonObject[] {
  return agent.tool_descriptors.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/**
 * The seed transcript of a chat run (spec 7.1): the latest system message of the history, else the
 * instructions (left out when empty); then the history without system messages; then the user input.
 */
export function seedTranscript(instructions: string, history: readonly Message[], input: string): Message[] {
  let system: string | null = null;
  for (const message of history)
    if (message['role'] === 'system' && typeof message['content'] === 'string') system = message['content'];
  system ??= instructions !== '' ? instructions : null;
  return [
    ...(system !== null ? [{ role: 'system', content: system }] : []),
    ...history.filter((message) => message['role'] !== 'system'),
    { role: 'user', content: input },
  ];
}
