export { applyMutations, applyMutationsSharing } from './apply-mutations';
export {
  compileContext,
  compileInvocationTurn,
  compileRequestMessages,
  convertToLlmRequest,
  reduceTurnContext,
} from './compile';
export type { CompiledTurn, ReducedTurnContext } from './compile';
export { ContextError, ContextErrorType } from './errors';
export type { ContextErrorKind } from './errors';
export {
  Experience,
  normalizeExperienceText,
  renderSystemPromptWithExperiences,
  splitSystemPromptExperiences,
} from './experiences';
export type { SplitPrompt } from './experiences';
export { removeFrameworkBlocks } from './framework-blocks';
export { canonicalJson, cloneJson, isPlainObject, JsonObject, JsonValue } from './json';
export type { JsonPrimitive } from './json';
export { validateToolLinkage } from './linkage';
export {
  forkTaskContent,
  multimodalAssistantSentence,
  toolCancelledContent,
  truncatedAssistantContent,
} from './markers';
export {
  asMessages,
  AssistantMessage,
  ChatMessage,
  ChatMessages,
  ContentPart,
  FunctionMessage,
  ImagePart,
  Message,
  SystemMessage,
  TextPart,
  ToolCall,
  ToolMessage,
  UserMessage,
} from './messages';
export {
  AssistantMessageMutation,
  AssistantTruncatedMutation,
  ContextReplaceMutation,
  ContextSummaryMutation,
  ExperienceForgetMutation,
  ExperienceRememberMutation,
  MultimodalToolResultMutation,
  Mutation,
  Mutations,
  ToolCancelledMutation,
  ToolResultMutation,
  UserMessageMutation,
} from './mutations';
export type { MutationType } from './mutations';
export { PromptContract, ToolPromptSpec } from './prompt-contract';
export type { PromptContractInput } from './prompt-contract';
export { renderLlmInputMessages, renderSystemContent } from './render-llm-input';
export { buildCanonicalMessages, parseSelfRefSnapshot, SelfRefSnapshot, withoutReasoning } from './selfref-snapshot';
export { normalizeSummary, parseSummary, renderSummary, SummaryPayload } from './summary';
export {
  collapse,
  compareCodePoints,
  lines,
  parsePythonInteger,
  removeTaggedBlocks,
  trim,
  whitespacePattern,
} from './text';
export { CompileRequest } from './compile-request';
export { argumentsForEvents, repairCandidates, repairedArgumentText, repairToolArguments } from './tool-arguments';
export type { RepairedArguments } from './tool-arguments';
export { buildToolPromptSpecs } from './tool-prompt-specs';
export type { ToolPromptSource } from './tool-prompt-specs';
export {
  resultForEvents,
  serializeToolResult,
  toolFailureContent,
  toolStepErrorContent,
  unknownToolContent,
} from './tool-results';
