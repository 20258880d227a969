import { Context } from '@temporalio/activity';
import { z } from 'zod';
import {
  repairToolArguments,
  serializeToolResult,
  toolFailureContent,
  toolStepErrorContent,
  unknownToolContent,
  type JsonObject,
  type Mutation,
  type MultimodalToolResultMutation,
} from '../context';
import { isMultimodalResult } from '../tools/images';
import { ImageError, multimodalMutation } from './multimodal-result';
import {
  cancelledCallMutation,
  isSelfRefTool,
  runSelfRefTool,
  SELFREF_FORK,
  type SelfRefIntent,
  type SelfRefIntentRecord,
  type ToolBatchInput,
  type ToolBatchResult,
  type ToolCallReport,
  type ToolCallRequest,
  utf8Bytes,
} from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import { cancellationError, isUserAbort, startHeartbeat } from './activity-context';
import type { SecretRedactor } from './redact';

export interface ToolBatchSettings {
  /** After an abort, how long calls may still finish and keep their results. */
  abortGraceMs: number;
  /** Tool error messages go to the model and into history: secrets are removed first. */
  redactor?: SecretRedactor;
}

interface CallLimits {
  timeoutSeconds: number;
  maxResultBytes: number;
  maxImageBytes: number;
}

interface Finished {
  content: string;
  report: ToolCallReport;
  intent?: SelfRefIntent;
  multimodal?: MultimodalToolResultMutation;
}

type CustomEvent = NonNullable<ToolBatchResult['custom_events']>[number];

/**
 * The tool batch: every call runs concurrently; results come back in the calls' declared order (spec
 * 7.6, deviation 10.c). Bad arguments, unknown tools and tools that throw become error results the
 * model sees. On a user abort the finished calls keep their results and the others are reported
 * unfinished; on worker shutdown the batch throws and runs again (idempotency keys make that safe).
 */
export function createToolBatch(registry: AgentRegistry, settings: ToolBatchSettings) {
  return async function toolBatch(input: ToolBatchInput): Promise<ToolBatchResult> {
    const context = Context.current();
    const signal = context.cancellationSignal;
    const workflowId = context.info.workflowExecution?.workflowId ?? 'unknown-workflow';
    const agentLimits = registry.limits(input.agent);
    const limits = {
      timeoutSeconds: agentLimits?.tool_timeout_seconds ?? 60,
      maxResultBytes: agentLimits?.max_tool_result_bytes ?? 256 * 1024,
      maxImageBytes: agentLimits?.max_image_bytes ?? 1024 * 1024,
    };
    // Keyed by position: a provider may repeat a call id within one batch.
    const finished = new Map<number, Finished>();
    const order: number[] = [];
    const customEvents: CustomEvent[] = [];
    const stopHeartbeat = startHeartbeat(context, () => ({
      iteration: input.iteration,
      finished: order.length,
      of: input.calls.length,
    }));
    try {
      if (!signal.aborted) {
        const runs = input.calls.map(async (call, index) => {
          const outcome = await runCall(
            registry,
            limits,
            input,
            call,
            workflowId,
            signal,
            settings.redactor,
            (event_name, data) => customEvents.push({ tool_call_id: call.id, tool_name: call.name, event_name, data }),
          );
          if (outcome === null) return;
          finished.set(index, outcome);
          order.push(index);
        });
        await Promise.race([Promise.all(runs), aborted(signal)]);
        if (signal.aborted) await Promise.race([Promise.all(runs), delay(settings.abortGraceMs)]);
      }
    } finally {
      stopHeartbeat();
    }
    if (signal.aborted && !isUserAbort(context)) throw cancellationError(context);
    return { ...batchResult(input.calls, finished, order, signal.aborted), custom_events: customEvents };
  };
}

async function runCall(
  registry: AgentRegistry,
  limits: CallLimits,
  input: ToolBatchInput,
  call: ToolCallRequest,
  workflowId: string,
  batchSignal: AbortSignal,
  redactor: SecretRedactor | undefined,
  emit: (eventName: string, data: JsonObject) => void,
): Promise<Finished | null> {
  const started = Date.now();
  const finish = (content: string, success = true, error?: string): Finished => ({
    content,
    report: {
      tool_call_id: call.id,
      tool_name: call.name,
      success,
      ...(error !== undefined ? { error } : {}),
      duration_ms: Date.now() - started,
    },
  });
  const selfref = registry.selfref(input.agent) && isSelfRefTool(call.name) && call.name !== SELFREF_FORK;
  const tool = selfref ? undefined : registry.toolFor(input.agent, call.name);
  if (!tool && !selfref) return finish(unknownToolContent(call.name));
  const args = repairToolArguments(call.arguments);
  if (!args.ok) return finish(toolFailureContent(call.name, args.text, 'Tool arguments are not a valid JSON object'));
  if (selfref) {
    // The memory key of a run is its workflow id (a fork child's id is its fork memory key).
    try {
      const outcome = runSelfRefTool(call.name, args.value, workflowId);
      return { ...finish(serializeToolResult(outcome.value)), ...(outcome.intent ? { intent: outcome.intent } : {}) };
    } catch (error) {
      return finish(toolFailureContent(call.name, args.text, (error as Error).message));
    }
  }
  if (!tool) return finish(unknownToolContent(call.name));
  const parsed = tool.parameters.safeParse(args.value);
  if (!parsed.success)
    return finish(
      toolFailureContent(
        call.name,
        args.text,
        `invalid arguments: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`,
      ),
    );
  const timeoutSeconds = tool.descriptor.timeout_seconds ?? limits.timeoutSeconds;
  const timeout = AbortSignal.timeout(timeoutSeconds * 1000);
  const signal = AbortSignal.any([batchSignal, timeout]);
  try {
    const value = await raceAbort(
      Promise.resolve().then(() =>
        tool.execute(parsed.data, {
          signal,
          idempotencyKey: idempotencyKey(workflowId, input, call),
          toolCallId: call.id,
          workflowId,
          iteration: input.iteration,
          emit: (eventName, data = {}) => emit(eventName, data),
        }),
      ),
      signal,
    );
    if (isMultimodalResult(value)) {
      try {
        return { ...finish(''), multimodal: await multimodalMutation(call, value, limits.maxImageBytes) };
      } catch (error) {
        if (error instanceof ImageError) return finish(toolFailureContent(call.name, args.text, error.message));
        throw error;
      }
    }
    const content = serializeToolResult(value);
    const bytes = utf8Bytes(content);
    if (bytes > limits.maxResultBytes) {
      return finish(
        toolFailureContent(
          call.name,
          args.text,
          `result is too large: ${bytes} bytes (limit ${limits.maxResultBytes})`,
        ),
      );
    }
    return finish(content);
  } catch (error) {
    if (batchSignal.aborted) return null;
    if (timeout.aborted) {
      const message = `Tool '${call.name}' timed out after ${timeoutSeconds} s`;
      return finish(toolStepErrorContent(message), false, message);
    }
    const message = error instanceof Error ? error.message : String(error);
    return finish(toolFailureContent(call.name, args.text, redactor ? redactor.redact(message) : message));
  }
}

/**
 * Unique per run chain: the chain's first run id tells apart two runs that reuse a workflow id (and a
 * provider that reuses call ids such as `call_0`); stable across retries, replays and continue-as-new.
 */
export function idempotencyKey(
  workflowId: string,
  input: Pick<ToolBatchInput, 'iteration' | 'run_chain_id'>,
  call: Pick<ToolCallRequest, 'id'>,
): string {
  // Batches scheduled by workflows that predate run_chain_id keep their old keys.
  return input.run_chain_id
    ? `${workflowId}/${input.run_chain_id}/${input.iteration}/${call.id}`
    : `${workflowId}/${input.iteration}/${call.id}`;
}

/** Stops waiting for a tool that ignores its signal; its late result is dropped. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return Promise.race([promise, aborted(signal).then(() => Promise.reject(signal.reason))]);
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Declared order: plain results and cancellations, then multimodal results (spec 7.6 step 5). */
function batchResult(
  calls: readonly ToolCallRequest[],
  finished: Map<number, Finished>,
  order: number[],
  wasAborted: boolean,
): ToolBatchResult {
  const mutations: Mutation[] = [];
  const multimodal: Mutation[] = [];
  const unfinished: string[] = [];
  const intents: SelfRefIntentRecord[] = [];
  for (const [index, call] of calls.entries()) {
    const done = finished.get(index);
    if (done?.multimodal) {
      multimodal.push(done.multimodal);
    } else if (done) {
      mutations.push({ type: 'ToolResultMutation', tool_call_id: call.id, content: done.content });
      if (done.intent) intents.push({ tool_call_id: call.id, intent: done.intent });
    } else {
      unfinished.push(call.id);
      mutations.push(cancelledCallMutation(call));
    }
  }
  return {
    outcome: wasAborted || unfinished.length > 0 ? 'aborted' : 'completed',
    mutations: [...mutations, ...multimodal],
    reports: order.map((id) => finished.get(id)!.report),
    unfinished,
    intents,
  };
}
