/** patchloop: durable ReAct agents on Temporal with a compiled, patch-based context model. */
export * from './context';
export * from './runtime';
export { defineTool, type Tool, type ToolContext, type ToolDefinition } from './tools/define-tool';
export { describedImages, imageFile, imageUrl } from './tools/images';
export { defineLlmFunction, type LlmFunction, type LlmFunctionDefinition } from './functions/define-llm-function';
export { PatchloopClient, RunFailedError, RunHandle, SessionHandle } from './client/patchloop-client';
export { followRun, jsonOutput, textOutput, type FollowOutput } from './client/follow';
export { createPatchloopWorker, type PatchloopWorker, type PatchloopWorkerOptions } from './worker/create-worker';
export { configFromEnvironment, type PatchloopConfig } from './worker/config';
export { FakeModelServer } from './fake-model/server';
export type { ChunkEvent, ChunkTransport, StreamEvent } from './streaming/chunk';
