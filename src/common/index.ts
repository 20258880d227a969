/**
 * The contract between patchloop's workflows and everything that talks to them: the messages a run
 * answers (signals, queries, updates), the failure types activities throw and workflows decide on, and
 * the sinks workflows report to. Workflow-safe: it imports only `@temporalio/workflow` definitions,
 * `ApplicationFailure` from `@temporalio/common`, and the pure runtime model.
 */
export {
  abortSignal,
  approveUpdate,
  childApprovalsSignal,
  closeSignal,
  compiledRequestQuery,
  decideApprovalSignal,
  deliverEventUpdate,
  eventsQuery,
  extendBudgetUpdate,
  nextRequestQuery,
  pendingApprovalsQuery,
  sendUpdate,
  statusQuery,
  transcriptPageQuery,
  transcriptQuery,
  userMessageSignal,
  userMessageUpdate,
} from './definitions';
export type {
  AbortSignalInput,
  EventsQueryInput,
  StatusQueryInput,
  UserMessageAccepted,
  UserMessageInput,
} from './definitions';
export { carriedFailure, failure, FailureType, NON_RETRYABLE_PROVIDER_ERRORS } from './failure-types';
export type { PatchloopSinks, RunEndedSummary } from './sinks';
export { PATCHLOOP_SEARCH_ATTRIBUTES, searchAttributesIn } from './search-attributes';
export type { SearchAttributesFact } from './search-attributes';
