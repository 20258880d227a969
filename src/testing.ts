/**
 * `patchloop/testing`: real OpenAI-compatible HTTP servers answering from scripts, for tests of agents
 * and tools (Chat Completions, and the Responses API from the same steps). Point the worker's
 * `OPENAI_BASE_URL` at their `url`.
 *
 * - `ScriptedModel` plays `modelScript`s: per conversation, "this request -> call these tools -> then
 *   answer this", checking each request; a script is a value any number of runs can use at once
 *   (docs/testing.md).
 * - `FakeModelServer` answers requests in arrival order from a list of steps that can break the way
 *   providers do (`fault`: connection resets, streams without a finish reason, junk lines; errors with
 *   any status); every request body is recorded, and an unscripted call or a leftover step fails
 *   `assertDone()`.
 */
export { ScriptedModel, ScriptPlayer, type ScriptedModelOptions } from './fake-model/scripted-model';
export {
  modelScript,
  modelScriptsFrom,
  type ConversationMatch,
  type ModelScript,
  type ScriptedCall,
  type ScriptedRequest,
  type ScriptStep,
  type StepExpectation,
  type TextMatch,
  type TextTest,
} from './fake-model/script';
export {
  FakeModelServer,
  type ChatRequestBody,
  type FakeModelOptions,
  type RecordedRequest,
  type Responder,
} from './fake-model/server';
export {
  callTools,
  failWith,
  reply,
  type FakeDrop,
  type FakeError,
  type FakeHang,
  type FakeReasoning,
  type FakeReply,
  type FakeStep,
  type FakeToolCall,
  type ReplyFault,
} from './fake-model/steps';
export { demoModel } from './fake-model/demo-model';
