/**
 * `patchloop/workflows`: the workflow-safe entry. Workflow code (yours or patchloop's) may import it:
 * it holds patchloop's workflows, the messages they answer and the wire types, and nothing that needs
 * Node, I/O or a clock.
 */
export { agentRun, chatSession, llmFunction, scheduledFire } from './workflows';
export {
  abortSignal,
  approveUpdate,
  carriedFailure,
  childApprovalsSignal,
  closeSignal,
  compiledRequestQuery,
  decideApprovalSignal,
  eventsQuery,
  extendBudgetUpdate,
  failure,
  FailureType,
  nextRequestQuery,
  NON_RETRYABLE_PROVIDER_ERRORS,
  PATCHLOOP_SEARCH_ATTRIBUTES,
  pendingApprovalsQuery,
  searchAttributesIn,
  sendUpdate,
  statusQuery,
  transcriptPageQuery,
  transcriptQuery,
  userMessageSignal,
  userMessageUpdate,
} from './common';
export type {
  AbortSignalInput,
  EventsQueryInput,
  PatchloopSinks,
  RunEndedSummary,
  SearchAttributesFact,
  StatusQueryInput,
  UserMessageAccepted,
  UserMessageInput,
} from './common';
export type {
  AgentRunInputWire,
  AgentRunResult,
  ChatSessionInputWire,
  ChatSessionResult,
  RunEvent,
  RunStatus,
  TurnReply,
} from './runtime';
