/**
 * `patchloop/workflows`: the workflow-safe entry. Workflow code (yours or patchloop's) may import it:
 * it holds patchloop's workflows, the messages they answer and the wire types, and nothing that needs
 * Node, I/O or a clock.
 */
export { agentRun, chatSession, llmFunction } from './workflows';
export * from './common';
export type {
  AgentRunInputWire,
  AgentRunResult,
  ChatSessionInputWire,
  ChatSessionResult,
  RunEvent,
  RunStatus,
  TurnReply,
} from './runtime';
