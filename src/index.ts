/**
 * patchloop: durable ReAct agents on Temporal with a compiled, patch-based context model. The root
 * entry is for worker and client code (Node). Workflow code imports `patchloop/workflows`; the pure
 * context model is `patchloop/context`; the scriptable fake model for tests is `patchloop/testing`.
 */

// Running agents: the client, following runs, and the worker.
export {
  ApprovalRefusedError,
  EventRefusedError,
  ForkRefusedError,
  PatchloopClient,
  RunFailedError,
  RunHandle,
  SessionHandle,
  type ForkMemo,
  type ForkOptions,
  type ForkSummary,
  type RetryingPhase,
} from './client/patchloop-client';
export { followRun, jsonOutput, textOutput, type FollowOutput } from './client/follow';
export { evaluate, type Candidate, type EvaluateOptions, type EvaluationReport } from './client/evaluation';
export {
  PatchloopSchedules,
  UnknownScheduleError,
  type AppliedSchedule,
  type RecentFire,
  type ScheduleDescription,
  type ScheduleSummary,
} from './client/schedules';
export {
  createPatchloopWorker,
  workflowsPath,
  workflowBundleOptions,
  type PatchloopWorker,
  type PatchloopWorkerOptions,
} from './worker/create-worker';
export { configFromEnvironment, type PatchloopConfig } from './config/environment';

// Serving agents to other services: the gateway (docs/gateway.md).
export {
  createPatchloopGateway,
  listen as listenGateway,
  type GatewayContext,
  type GatewayOptions,
} from './gateway/gateway';
export { createKey, revokeKeys } from './gateway/keys';
export type { Principal } from './gateway/principal';

// Defining agents, tools and typed functions.
export {
  defineTool,
  RetryableToolError,
  type ApprovalContext,
  type NeedsApproval,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolRetryPolicy,
} from './tools/define-tool';
export { describedImages, imageFile, imageUrl } from './tools/images';
export {
  defineGuardrail,
  type Guardrail,
  type GuardrailContext,
  type GuardrailDefinition,
} from './tools/define-guardrail';
export type { GuardrailStage, GuardrailSubject, GuardrailVerdict } from './runtime';
export { defineLlmFunction, type LlmFunction, type LlmFunctionDefinition } from './functions/define-llm-function';
export { AgentDefinition, AgentLimits, type AgentDefinitionInput } from './runtime';
export {
  ScheduleDefinition,
  type ScheduleDefinitionInput,
  type ScheduledFireInputWire,
  type ScheduledFireResult,
} from './runtime';

// The Temporal contract any service can use (also through the `temporal` CLI).
export {
  abortSignal,
  approveUpdate,
  closeSignal,
  eventsQuery,
  FailureType,
  nextRequestQuery,
  pendingApprovalsQuery,
  sendUpdate,
  statusQuery,
  transcriptQuery,
  userMessageSignal,
  userMessageUpdate,
  type AbortSignalInput,
  type EventsQueryInput,
  type StatusQueryInput,
  type UserMessageAccepted,
  type UserMessageInput,
} from './common';
export {
  AgentRunInput,
  AgentRunResult,
  ApprovalDecision,
  PendingApproval,
  type ApprovalAccepted,
  type EventDelivered,
  type EventDelivery,
  type WaitSettings,
  ChatSessionInput,
  ChatSessionResult,
  TurnReply,
  UnprocessedMessage,
  type AgentRunInputWire,
  type ChatSessionInputWire,
  type EventPage,
  PROTOCOL_VERSION,
  RunEvent,
  StreamEvent,
  type RunEventType,
  type RunState,
  type RunStatus,
  type TokenUsage,
} from './runtime';
export { CliErrorType } from './common/cli-error-types';
export type { Message, Mutation } from './context';
export type { ChunkEvent, ChunkStreamEnd, ChunkTransport } from './streaming/chunk';
