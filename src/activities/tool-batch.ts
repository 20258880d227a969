import { Context } from '@temporalio/activity';
import type { ToolBatchInput, ToolBatchResult, ToolCallRequest } from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import { runKey, type RequestCache } from './request-source';
import { cancellationError, isUserAbort, startHeartbeat } from './activity-context';
import { delay } from './attempt-signal';
import { inGenAiSpan } from './gen-ai-spans';
import type { McpServers } from './mcp-connections';
import type { SecretRedactor } from './redact';
import { BatchProgress, CHECKPOINT_BYTES } from './tool-batch-progress';
import { runCall } from './tool-call';
import type { CallLimits, CallScope } from './tool-call-outcome';

export interface ToolBatchSettings {
  /** After an abort, how long calls may still finish and keep their results. */
  abortGraceMs: number;
  /** Tool error messages go to the model and into history: secrets are removed first. */
  redactor?: SecretRedactor;
  /**
   * Without payloads by reference, the whole batch result must fit one payload: past this budget the
   * largest results become error results (the calls ran; the model learns their output was too large).
   */
  maxBatchBytes?: number;
  /** The checkpoint's budget (see CHECKPOINT_BYTES); lower where payloads go by reference sooner. */
  checkpointBytes?: number;
  /** The worker's MCP connections (calls of agents' MCP tools). */
  mcp?: McpServers;
}

/** After an abort's grace, how long a call that finished in it may take to become its result. */
const RESULT_SETTLE_MS = 1000;

/**
 * The tool batch: every call runs concurrently; results come back in the calls' declared order (spec
 * 7.6, deviation 10.c). Bad arguments, unknown tools and tools that throw become error results the
 * model sees. On a user abort the finished calls keep their results and the others are reported
 * unfinished; on worker shutdown the batch throws and runs again (idempotency keys make that safe).
 */
export function createToolBatch(registry: AgentRegistry, settings: ToolBatchSettings, requests?: RequestCache) {
  return function toolBatch(input: ToolBatchInput): Promise<ToolBatchResult> {
    // A local activity (fast tools) has no heartbeats: the workflow task it runs in is its liveness.
    const checkpointed = !Context.current().info.isLocal;
    return runBatch({ registry, settings, requests }, input, { checkpointed, maxBatchBytes: settings.maxBatchBytes });
  };
}

/**
 * A batch of fast tools that the model call's activity runs right after the reply (`fast_tools`): no
 * checkpoints (the model call's heartbeat is the activity's liveness, and a retry asks the model again),
 * and the payload budget the reply left.
 */
export type InlineBatch = (input: ToolBatchInput, maxBatchBytes: number | undefined) => Promise<ToolBatchResult>;

export function createInlineBatch(
  registry: AgentRegistry,
  settings: ToolBatchSettings,
  requests?: RequestCache,
): InlineBatch {
  return (input, maxBatchBytes) =>
    runBatch({ registry, settings, requests }, input, { checkpointed: false, maxBatchBytes });
}

interface BatchWorker {
  registry: AgentRegistry;
  settings: ToolBatchSettings;
  requests: RequestCache | undefined;
}

async function runBatch(
  worker: BatchWorker,
  input: ToolBatchInput,
  mode: { checkpointed: boolean; maxBatchBytes: number | undefined },
): Promise<ToolBatchResult> {
  const { registry, settings, requests } = worker;
  const context = Context.current();
  const signal = context.cancellationSignal;
  const budget = Math.min(
    CHECKPOINT_BYTES,
    settings.checkpointBytes ?? CHECKPOINT_BYTES,
    settings.maxBatchBytes ?? CHECKPOINT_BYTES,
  );
  const progress = new BatchProgress(input, budget, settings.redactor);
  // A retried attempt keeps what the previous one finished (its last checkpoint) and runs the rest.
  if (mode.checkpointed) progress.resume(context.info.heartbeatDetails);
  const stopHeartbeat = mode.checkpointed ? startHeartbeat(context, () => progress.details()) : () => undefined;
  try {
    if (!signal.aborted)
      await runCalls({ registry, settings, input, context, progress, checkpointed: mode.checkpointed });
  } finally {
    stopHeartbeat();
  }
  if (signal.aborted && !isUserAbort(context)) {
    // A shutdown: the retry elsewhere resumes from the last heartbeat, which goes out with this failure;
    // it must hold every call finished, the last one too (settling that one sends no heartbeat).
    if (mode.checkpointed) context.heartbeat(progress.details());
    throw cancellationError(context);
  }
  const result = progress.result(signal.aborted, mode.maxBatchBytes);
  // The next request's new messages, if this worker also makes the run's next model call.
  const execution = context.info.workflowExecution;
  if (result.outcome === 'completed' && execution) requests?.answered(runKey(execution), result.mutations);
  return result;
}

/** One attempt of a batch: its calls, where their outcomes go, and what they may use. */
interface BatchAttempt {
  registry: AgentRegistry;
  settings: ToolBatchSettings;
  input: ToolBatchInput;
  context: Context;
  progress: BatchProgress;
  /** Whether finished calls go out in heartbeats (not in a local activity, nor inside the model call's). */
  checkpointed: boolean;
}

/** The calls the checkpoint lacks, concurrently; after an abort, each waited for `abortGraceMs` at most. */
async function runCalls(batch: BatchAttempt): Promise<void> {
  const signal = batch.context.cancellationSignal;
  const limits = callLimits(batch.registry, batch.input.agent);
  const runs = batch.input.calls.map((call, index) => runBatchCall(batch, limits, call, index));
  await Promise.race([Promise.all(runs), aborted(signal)]);
  // Each call stops being waited for `abortGraceMs` after the abort; then its result is made.
  if (signal.aborted) await Promise.race([Promise.all(runs), delay(batch.settings.abortGraceMs + RESULT_SETTLE_MS)]);
}

/** One call in its span; a call that finished is checkpointed at once. */
async function runBatchCall(batch: BatchAttempt, limits: CallLimits, call: ToolCallRequest, index: number) {
  const { context, progress } = batch;
  if (progress.has(index)) return;
  const attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.id,
  };
  const outcome = await inGenAiSpan(`execute_tool ${call.name}`, attributes, () =>
    runCall(callScope(batch, limits, call, index)),
  );
  // Checkpointed at once (the SDK sends it as soon as its heartbeat throttle allows), so a crash after
  // this point does not run the call again; the batch's last call goes out with its result instead.
  if (progress.settle(index, call, outcome) && !progress.complete() && batch.checkpointed)
    context.heartbeat(progress.details());
}

/** What one call of the batch may use, from its start. */
function callScope(batch: BatchAttempt, limits: CallLimits, call: ToolCallRequest, index: number): CallScope {
  const { context, settings, progress } = batch;
  return {
    registry: batch.registry,
    limits,
    input: batch.input,
    call,
    workflowId: context.info.workflowExecution?.workflowId ?? 'unknown-workflow',
    batchSignal: context.cancellationSignal,
    graceMs: settings.abortGraceMs,
    redactor: settings.redactor,
    mcp: settings.mcp,
    progress: (update) => progress.progressed(call.id, update),
    emit: (eventName, data) => progress.emitted(index, call, eventName, data),
    started: Date.now(),
    attempt: context.info.attempt,
  };
}

/** The agent's limits of a call, or defaults for an agent this worker does not serve. */
function callLimits(registry: AgentRegistry, agent: string): CallLimits {
  const limits = registry.limits(agent);
  return {
    timeoutSeconds: limits?.tool_timeout_seconds ?? 60,
    maxResultBytes: limits?.max_tool_result_bytes ?? 256 * 1024,
    maxImageBytes: limits?.max_image_bytes ?? 1024 * 1024,
  };
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
