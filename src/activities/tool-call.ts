import { z } from 'zod';
import {
  repairToolArguments,
  serializeToolResult,
  toolFailureContent,
  toolStepErrorContent,
  unknownToolContent,
  type JsonObject,
} from '../context';
import { isSelfRefTool, runSelfRefTool, SELFREF_FORK, type ToolBatchInput, type ToolCallRequest } from '../runtime';
import { isRetryableToolError, retryDelayMs, type Tool } from '../tools/define-tool';
import { attemptSignal, delay, raceAbort } from './attempt-signal';
import { runMcpTool } from './mcp-tool-call';
import {
  callResult,
  stillRunning,
  toolOutcome,
  type CallOutcome,
  type CallScope,
  type Finished,
} from './tool-call-outcome';
import { abortedCallNote, notRepeatable, uncertainEffect } from './uncertain-effect';

/**
 * One call (spec 7.6): unknown tools, arguments that do not parse or validate, and tools that throw
 * become error results the model sees. Null when the batch was aborted before it finished (or
 * StillRunning, when it may yet take effect). A call of an MCP server's tool goes to `runMcpTool`.
 */
export async function runCall(scope: CallScope): Promise<CallOutcome> {
  const { registry, input, call } = scope;
  const mcp = input.mcp_tools?.[call.name];
  if (mcp) return runMcpTool(scope, mcp);
  const selfref = registry.selfref(input.agent) && isSelfRefTool(call.name) && call.name !== SELFREF_FORK;
  const tool = selfref ? undefined : registry.toolFor(input.agent, call.name);
  if (!tool && !selfref) return callResult(scope, unknownToolContent(call.name));
  const args = repairToolArguments(call.arguments);
  if (!args.ok)
    return callResult(scope, toolFailureContent(call.name, args.text, 'Tool arguments are not a valid JSON object'));
  if (!tool) return runSelfRef(scope, args.value, args.text);
  const parsed = validateArguments(tool, args.value);
  if (!parsed.ok) return callResult(scope, toolFailureContent(call.name, args.text, parsed.reason));
  return runTool(scope, tool, parsed.value, args.text);
}

/** Arguments checked against the tool's schema: the value the tool runs with, or why not. */
export function validateArguments(
  tool: Tool,
  value: JsonObject,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  const parsed = tool.parameters.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, reason: `invalid arguments: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}` };
}

/** SelfRef tools run here and leave an intent the workflow applies (the memory key is the workflow id). */
function runSelfRef(scope: CallScope, args: JsonObject, argumentText: string): Finished {
  try {
    const outcome = runSelfRefTool(scope.call.name, args, scope.workflowId);
    return {
      ...callResult(scope, serializeToolResult(outcome.value)),
      ...(outcome.intent ? { intent: outcome.intent } : {}),
    };
  } catch (error) {
    return callResult(scope, toolFailureContent(scope.call.name, argumentText, (error as Error).message));
  }
}

/**
 * A registered tool, under its timeout and the batch's abort signal. A `RetryableToolError` runs it
 * again after its policy's backoff (the batch heartbeats meanwhile), each attempt under the timeout. A
 * call still running when it stops being waited for (a timeout, or an abort's grace) may yet take
 * effect: unless the tool is `idempotent`, the model is told so.
 */
async function runTool(scope: CallScope, tool: Tool, args: unknown, argumentText: string): Promise<CallOutcome> {
  const { call, input, workflowId, limits } = scope;
  const timeoutSeconds = tool.descriptor.timeout_seconds ?? limits.timeoutSeconds;
  const context = {
    idempotencyKey: idempotencyKey(workflowId, input, call),
    toolCallId: call.id,
    workflowId,
    iteration: input.iteration,
    emit: (eventName: string, data: JsonObject = {}) => scope.emit(eventName, data),
  };
  for (let attempt = 1; ; attempt += 1) {
    const under = attemptSignal(scope.batchSignal, timeoutSeconds * 1000, undefined, scope.graceMs);
    const { signal } = under;
    const running = watched(Promise.resolve().then(() => tool.execute(args, { ...context, signal })));
    try {
      const value = await raceAbort(running.promise, under.waitUntil).finally(under.release);
      return await toolOutcome(scope, value, argumentText);
    } catch (error) {
      if (scope.batchSignal.aborted)
        return running.settled() || tool.idempotent ? null : stillRunning(scope, abortedCallNote(call.name));
      if (under.timedOut()) return timedOutTool(scope, tool, running, argumentText, timeoutSeconds);
      const message = error instanceof Error ? error.message : String(error);
      if (tool.retry && isRetryableToolError(error) && attempt < tool.retry.maxAttempts) {
        await delay(retryDelayMs(tool.retry, attempt), scope.batchSignal);
        if (scope.batchSignal.aborted) return null;
        continue;
      }
      const attempts = tool.retry && isRetryableToolError(error) ? ` (after ${attempt} attempts)` : '';
      const redacted = scope.redactor?.redact(message) ?? message;
      return callResult(scope, toolFailureContent(call.name, argumentText, `${redacted}${attempts}`));
    }
  }
}

/**
 * A registered tool's call past its timeout, given the abort's grace to stop: a value it returns then
 * is its result (its side effect is done); an error says it stopped; still running, it may take effect.
 */
async function timedOutTool(
  scope: CallScope,
  tool: Tool,
  running: Watched,
  argumentText: string,
  timeoutSeconds: number,
): Promise<Finished> {
  const late = await running.within(scope.graceMs);
  if (late?.ok) return toolOutcome(scope, late.value, argumentText);
  const timedOut = `Tool '${scope.call.name}' timed out after ${timeoutSeconds} s`;
  const message =
    late || tool.idempotent
      ? timedOut
      : uncertainEffect(`${timedOut} and was still running when told to stop, and ${notRepeatable('registered')}`);
  return callResult(scope, toolStepErrorContent(message), false, message);
}

/** A promise whose settling can be asked about, or waited for a while. */
interface Watched {
  promise: Promise<unknown>;
  settled(): boolean;
  /** How it settled, if it does within `ms`; undefined if it is still pending then. */
  within(ms: number): Promise<{ ok: true; value: unknown } | { ok: false } | undefined>;
}

function watched(promise: Promise<unknown>): Watched {
  let outcome: { ok: true; value: unknown } | { ok: false } | undefined;
  const done = promise.then(
    (value) => (outcome = { ok: true, value }),
    () => (outcome = { ok: false }),
  );
  return {
    promise,
    settled: () => outcome !== undefined,
    within: async (ms) => {
      await Promise.race([done, delay(ms)]);
      return outcome;
    },
  };
}

/**
 * Unique per run chain: the chain's first run id tells apart two runs that reuse a workflow id (and a
 * provider that reuses call ids such as `call_0`); stable across retries, replays and continue-as-new.
 */
function idempotencyKey(
  workflowId: string,
  input: Pick<ToolBatchInput, 'iteration' | 'run_chain_id' | 'reply_attempt'>,
  call: Pick<ToolCallRequest, 'id'>,
): string {
  // A reply asked again may reuse a call id for another call: calls run with their reply say which.
  const reply = input.reply_attempt !== undefined ? `/reply${input.reply_attempt}` : '';
  // Batches scheduled by workflows that predate run_chain_id keep their old keys.
  return input.run_chain_id
    ? `${workflowId}/${input.run_chain_id}/${input.iteration}${reply}/${call.id}`
    : `${workflowId}/${input.iteration}/${call.id}`;
}
