/**
 * `patchloop/testing`: a real OpenAI-compatible HTTP server answering from a script, for tests of
 * agents and tools (Chat Completions, and the Responses API from the same steps). Point the worker's
 * `OPENAI_BASE_URL` at `fake.url`; every request body is recorded, and an unscripted call or a leftover
 * step fails `assertDone()`. Steps can break the way providers do
 * (`fault`: connection resets, streams without a finish reason, junk lines; errors with any status).
 */
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
