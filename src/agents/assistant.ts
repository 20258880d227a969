import type { AgentDefinitionInput } from '../runtime';

/** The example agent the worker serves by default. */
export const assistantAgent: AgentDefinitionInput = {
  name: 'assistant',
  instructions:
    'You are a helpful assistant. Use the add tool for arithmetic, the wait tool when asked to wait, and the repeat tool to repeat text. Answer briefly.',
  tools: ['add', 'wait', 'repeat'],
};

/** The example agent with a gate: its `repeat` calls wait for a person's decision (the demo approves one). */
export const carefulAssistantAgent: AgentDefinitionInput = {
  ...assistantAgent,
  name: 'careful-assistant',
  needs_approval: ['repeat'],
};
