export { agentRun } from './agent-run';
export * from './definitions';
export { chatSession } from './chat-session';
export { llmFunction } from './llm-function';
