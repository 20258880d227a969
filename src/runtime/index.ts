export {
  AgentDefinition,
  AgentLimits,
  agentModel,
  AgentSpec,
  DEFAULT_LLM_SERVER_ERROR_SECONDS,
  ToolDescriptor,
} from './agent';
export type { AgentDefinitionInput } from './agent';
export { digestText, REQUEST_PAGE_CHARS, requestFields, RequestWriter } from './digest';
export { HEARTBEAT_EVERY_MS, HEARTBEAT_FIRST_MS, heartbeatsIn } from './heartbeats';
export type { RequestText } from './digest';
export { ChunkEvent, ChunkStreamEnd, EventOrigin, PROTOCOL_VERSION, RunEvent, StreamEvent } from './events';
export type {
  EventPage,
  LoggedRunEvent,
  ReportedState,
  RunEventBody,
  RunEventType,
  RunOrigin,
  RunState,
  RunStatus,
} from './events';
export {
  AttemptFailure,
  attemptFailureIn,
  LlmFunctionInput,
  LlmPhaseInput,
  LlmPhaseResult,
  LlmRequest,
  PreparedFunction,
  replyCallRequests,
  replyContent,
  replyToolCalls,
  RequestPage,
  SelfRefIntentRecord,
  ToolBatchCheckpoint,
  ToolBatchInput,
  ToolBatchResult,
  ToolCallReport,
  ToolCallRequest,
} from './phases';
export {
  A2A_PUSH_KEPT_DELIVERIES,
  A2A_PUSH_MAX_CONFIGS,
  a2aPushDeliveryId,
  A2aPushTarget,
  a2aPushWatcherId,
  A2aPushWatcherInput,
  a2aPushWatcherPrefix,
} from './a2a-push';
export type {
  A2aPushDelivery,
  A2aPushDeliveryInput,
  A2aPushWatcherInputWire,
  A2aPushWatcherResult,
  A2aTaskChange,
  A2aTaskChangeInput,
} from './a2a-push';
export {
  cutToBytes,
  hostOf,
  notificationBody,
  notifierWorkflowId,
  NOTIFY_GIVE_UP_SECONDS,
  NOTIFY_MAX_RETRY_INTERVAL_SECONDS,
  NotificationBody,
  NotifierInput,
  NotifyDeliveryInput,
  NotifySettings,
} from './notify';
export type { NotifiedStatus, NotifyDelivered, NotifySettingsInput, RunEnding } from './notify';
export { AgentRunInput, AgentRunResult, CallerOrigin, failedRunOutcome, UnprocessedMessage } from './run-input';
export type { AgentRunInputWire, AgentRunOutcome, RunSpending } from './run-input';
export { addUsage, estimatedUsage, providerUsage, responsesUsage, TokenUsage } from './usage';
export {
  gatesMcpTool,
  MCP_LISTING_ACTIVITY_SECONDS,
  MCP_LISTING_SECONDS,
  mcpCallLimits,
  mcpGrantOf,
  McpServerConfig,
  mcpServersProblem,
  mcpToolClash,
  McpToolReference,
  mcpToolsTooLarge,
  ownToolNames,
  withMcpGrant,
  withoutMcpTools,
} from './mcp-settings';
export type { McpGrant } from './mcp-settings';
export {
  AgentRunState,
  AwaitingBatch,
  CarriedRun,
  ContinueAsNewPolicy,
  DurableRun,
  partOf,
  RECENT_UPDATE_RESULT_CHARS,
  RECENT_UPDATES,
  RECENT_UPDATES_RESULT_CHARS,
  RecentUpdate,
  RUN_STATE_SCHEMA_VERSION,
  RUN_STATE_SCHEMA_VERSIONS,
  TurnContext,
} from './carried-state';
export type { RunningBatch } from './carried-state';
export { promptContractFor, providerTools, seedTranscript } from './agent-prompt';
export {
  collectSelfRefMutations,
  forkMessage,
  isSelfRefTool,
  queueIntent,
  runSelfRefTool,
  SELFREF_FORK,
  selfRefToolDescriptors,
} from './selfref-tools';
export type { SelfRefIntent } from './selfref-tools';
export {
  ChatSessionInput,
  ChatSessionResult,
  lastTurnFailure,
  SESSION_SCHEMA_VERSION,
  SESSION_SCHEMA_VERSIONS,
  SessionForkCapture,
  SessionState,
  TurnReply,
} from './session';
export type { ChatSessionInputWire } from './session';
export { checkUserMessage, DEFAULT_MESSAGE_LIMITS, utf8Bytes } from './user-message';
export type { MessageLimits } from './user-message';
export { decideNext } from './next-step';
export type { NextStep, TurnFacts } from './next-step';
export { cancelledCallMutation, truncatedReplyMutation, withAbortReason } from './abort-mutations';
export {
  APPROVAL_TIMED_OUT,
  ApprovalDecision,
  ApprovalRecord,
  ChildApprovals,
  decisionRefusal,
  isUndecided,
  PendingApproval,
  rejectedCallContent,
  relayedPending,
  routeDecision,
  ToolReview,
  ToolReviewInput,
  undecidedRecords,
} from './approvals';
export type { ApprovalAccepted } from './approvals';
export { providerJsonSchema } from './json-schemas';
export { ConfigurationError, isConfigurationError } from './configuration-error';
export {
  ContextOverride,
  contextProblem,
  ContextSettings,
  effectiveContext,
  keepRecentTokens,
} from './context-settings';
export { parseContextOverflow, saysContextTooLong } from './context-overflow';
export type { ContextOverflow } from './context-overflow';
export {
  CHARS_PER_TOKEN,
  compactionTarget,
  estimateRequestTokens,
  isClearedResult,
  isSummaryMessage,
  messagesTokens,
  planCompaction,
  summarizedTranscript,
  summaryChunks,
  summaryMessage,
  summaryRequestMessages,
  tokenRate,
} from './compaction';
export type { CompactionBudget, CompactionStats } from './compaction';
export { MODEL_WINDOWS, modelWindow } from './model-windows';
export {
  BudgetExtension,
  BudgetOverride,
  budgetProblem,
  budgetReport,
  BudgetReport,
  BudgetSettings,
  costOf,
  DEFAULT_BUDGET_LIMITS,
  effectiveBudget,
  effectiveLimits,
  emptyUsageLedger,
  exceededLimits,
  exhaustedSummary,
  extendLedger,
  NO_BOUNDS,
  recordCall,
  recordChildUsage,
  remainingBudget,
  reservedOutputTokens,
  spentOf,
  TokenPrices,
} from './budget';
export type { BudgetLimit, StepEstimate } from './budget';
export {
  adaptRequest,
  missingProviderKeys,
  PROVIDER_PROFILES,
  ProviderApi,
  providerKeyProblem,
  ProviderProfileName,
  resolveProvider,
} from './provider';
export type { ProviderProfile, ResolvedProvider } from './provider';
export { fittedResult, fittedSessionResult, INLINE_PAYLOAD_BUDGET, readableLimitBytes } from './result-size';
export { transcriptPageBytes, transcriptPageEnd } from './transcript-pages';
export type { TranscriptPage, TranscriptPageInput } from './transcript-pages';
export { agentCallDescriptors, subagentPrompt, subagentTask } from './agent-calls';
export {
  deliveryProblem,
  rememberedKeys,
  SLEEP_TOOL,
  takeHeldEvent,
  unprocessedEvents,
  WAIT_FOR_EVENT_TOOL,
  waitPlan,
  waitResultText,
  waitToolDescriptors,
  type EventDelivered,
  type WaitOutcome,
  type WaitPlan,
  type WaitTimes,
} from './waits';
export { EventDelivery, HeldEvent, MAX_INBOX_EVENTS, WaitSettings } from './wait-settings';
export { PRINCIPAL_NAME, PrincipalName } from './principal';
export {
  extraHandoffMessage,
  handedOffSpec,
  handoffMutation,
  handoffReason,
  handoffResultContent,
  handoffTarget,
} from './handoffs';
export {
  cancelledBatch,
  EMPTY_BATCH,
  failedCall,
  fusableTools,
  fusedCalls,
  mergeInDeclaredOrder,
  planBatch,
  succeededCall,
} from './batch-plan';
export type { ActivityGroup, BatchPlan, WorkflowCallResult } from './batch-plan';
export {
  charged,
  fireRunBudget,
  runSpending,
  answerPreview,
  ScheduleDefinition,
  ScheduledFireInput,
  scheduleExhausted,
  scheduleIdOf,
  scheduleRemaining,
  ScheduleSpending,
} from './schedule';
export type { ScheduleDefinitionInput, ScheduledFireInputWire, ScheduledFireResult } from './schedule';
export { isEndPhase, runPhaseOf } from './run-phase';
export type { RunPhase } from './run-phase';
export {
  FORK_CAPTURE_MEMO,
  forkedSession,
  forkedState,
  forkOverrides,
  forkPoint,
  forkUnitOf,
  inheritedSettings,
  withInherited,
} from './fork';
export { ForkSource } from './fork-source';
export { decideCall, describeSource, globMatches, PolicyRule, ToolPolicy } from './tool-policy';
export type { PolicyVerdict } from './tool-policy';
export {
  blockedContent,
  checkedVerdict,
  checkName,
  GUARDRAIL_STAGES,
  GuardrailCheck,
  GuardrailCheckInput,
  GuardrailCheckResult,
  GuardrailSubject,
  GuardrailVerdict,
  judgeMessages,
  judgeVerdict,
  rewrittenArguments,
  UNCHECKED_RESULT,
  stageChecksFor,
  stopsStage,
} from './guardrails';
export type { GuardrailStage } from './guardrails';
export type { ForkUnit } from './fork';
export { NO_RECORDING, recordedAnswers, recordedCalls, ToolRecordings } from './tool-recordings';
export { checkCase, EvalCase, EvalDataset, judgePrompt, parseVerdict } from './evaluation';
export type { CaseOutcome, CheckResult } from './evaluation';
