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
import { describedImages, imageUrl, isMultimodalResult } from '../tools/images';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { McpServerError, readMcpResult, type McpCallResult, type McpProgress, type McpServers } from './mcp-servers';
import { notRepeatable, uncertainEffect } from './uncertain-effect';
import { describeImages, ImageError, multimodalMutation } from './multimodal-result';
import {
  cancelledCallMutation,
  isSelfRefTool,
  runSelfRefTool,
  SELFREF_FORK,
  type SelfRefIntent,
  type SelfRefIntentRecord,
  ToolBatchCheckpoint,
  type ToolBatchInput,
  type ToolBatchResult,
  type ToolCallReport,
  type ToolCallRequest,
  type McpToolReference,
  mcpCallLimits,
  utf8Bytes,
} from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import { runKey, type RequestCache } from './request-source';
import { cancellationError, isUserAbort, startHeartbeat } from './activity-context';
import { attemptSignal, raceAbort } from './attempt-signal';
import { inGenAiSpan } from './gen-ai-spans';
import type { SecretRedactor } from './redact';
import { isRetryableToolError, retryDelayMs, type Tool } from '../tools/define-tool';

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

/**
 * A call an abort left running that is not known to be repeatable: cancelled like any unfinished call
 * (the spec's marker), its marker and its error event saying it may still take effect (`note`).
 */
interface StillRunning {
  note: string;
  report: ToolCallReport;
}

/** What became of one call: finished, left running after an abort, or stopped by an abort (null). */
type CallOutcome = Finished | StillRunning | null;

type CustomEvent = NonNullable<ToolBatchResult['custom_events']>[number];

/** After an abort's grace, how long a call that finished in it may take to become its result. */
const RESULT_SETTLE_MS = 1000;

/**
 * The tool batch: every call runs concurrently; results come back in the calls' declared order (spec
 * 7.6, deviation 10.c). Bad arguments, unknown tools and tools that throw become error results the
 * model sees. On a user abort the finished calls keep their results and the others are reported
 * unfinished; on worker shutdown the batch throws and runs again (idempotency keys make that safe).
 */
export function createToolBatch(registry: AgentRegistry, settings: ToolBatchSettings, requests?: RequestCache) {
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
    const stillRunning = new Map<number, StillRunning>();
    const order: number[] = [];
    const customEvents: Array<{ index: number; event: CustomEvent }> = [];
    // A retried attempt keeps what the previous one finished (its last checkpoint) and runs the rest.
    for (const done of resumedCalls(context.info.heartbeatDetails, input)) {
      const { index, custom_events: events, ...outcome } = done;
      finished.set(index, outcome);
      order.push(index);
      for (const event of events) customEvents.push({ index, event });
    }
    const budget = Math.min(
      CHECKPOINT_BYTES,
      settings.checkpointBytes ?? CHECKPOINT_BYTES,
      settings.maxBatchBytes ?? CHECKPOINT_BYTES,
    );
    // MCP progress notifications of running calls, by call id: shown with the heartbeat (not recorded).
    const progress = new Map<string, McpProgress>();
    // Heartbeat details reach the server (and history, if the attempt times out): what goes into them
    // (finished calls, progress) has its secrets removed once, when it arrives, as from the batch's result.
    const redacted = <T>(value: T): T =>
      settings.redactor?.containsSecret(value) ? settings.redactor.redactValue(value) : value;
    const details = () => ({
      ...checkpoint(input, finished, order, customEvents, budget),
      ...(progress.size > 0 ? { progress: Object.fromEntries(progress) } : {}),
    });
    // A local activity (fast tools) has no heartbeats: the workflow task it runs in is its liveness.
    const local = context.info.isLocal;
    const stopHeartbeat = local ? () => undefined : startHeartbeat(context, details);
    try {
      if (!signal.aborted) {
        const runs = input.calls.map(async (call, index) => {
          if (finished.has(index)) return;
          const attributes = {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': call.name,
            'gen_ai.tool.call.id': call.id,
          };
          const outcome = await inGenAiSpan(`execute_tool ${call.name}`, attributes, () =>
            runCall({
              registry,
              limits,
              input,
              call,
              workflowId,
              batchSignal: signal,
              graceMs: settings.abortGraceMs,
              redactor: settings.redactor,
              mcp: settings.mcp,
              progress: (update) => progress.set(call.id, redacted(update)),
              emit: (event_name, data) =>
                customEvents.push({
                  index,
                  event: redacted({ tool_call_id: call.id, tool_name: call.name, event_name, data }),
                }),
              started: Date.now(),
              attempt: context.info.attempt,
            }),
          );
          progress.delete(call.id);
          if (outcome === null) return;
          if ('note' in outcome) {
            stillRunning.set(index, redacted(outcome));
            return;
          }
          finished.set(index, redacted(outcome));
          order.push(index);
          // Checkpointed at once (the SDK sends it as soon as its heartbeat throttle allows), so a crash
          // after this point does not run the call again.
          if (!local) context.heartbeat(details());
        });
        await Promise.race([Promise.all(runs), aborted(signal)]);
        // Each call stops being waited for `abortGraceMs` after the abort; then its result is made.
        if (signal.aborted) await Promise.race([Promise.all(runs), delay(settings.abortGraceMs + RESULT_SETTLE_MS)]);
      }
    } finally {
      stopHeartbeat();
    }
    if (signal.aborted && !isUserAbort(context)) throw cancellationError(context);
    const batch = {
      ...batchResult(input.calls, { finished, order, stillRunning }, signal.aborted),
      custom_events: customEvents.map(({ event }) => event),
    };
    const result =
      settings.maxBatchBytes === undefined ? batch : withinBudget(batch, input.calls, settings.maxBatchBytes);
    // The next request's new messages, if this worker also makes the run's next model call.
    const execution = context.info.workflowExecution;
    if (result.outcome === 'completed' && execution) requests?.answered(runKey(execution), result.mutations);
    return result;
  };
}

/**
 * A checkpoint rides on every heartbeat (the server keeps only the latest details), so it stays small:
 * inline under the payload-storage threshold (an encrypted heartbeat would be stored anew each second),
 * and a run's routed batches together far below the 4 MB a `describe()` answer may carry. Calls whose
 * results do not fit run again on retry.
 */
const CHECKPOINT_BYTES = 192 * 1024;

/**
 * The batch's progress for its heartbeat: counts for people, and the finished calls (in completion
 * order, as many as fit the budget) for a retried attempt.
 */
function checkpoint(
  input: ToolBatchInput,
  finished: Map<number, Finished>,
  order: number[],
  customEvents: Array<{ index: number; event: CustomEvent }>,
  budget: number,
): ToolBatchCheckpoint & { finished: number; of: number } {
  // Later calls may still fit when an earlier large one did not.
  const done: ToolBatchCheckpoint['done'] = [];
  let bytes = 0;
  for (const index of order) {
    const entry = {
      index,
      ...finished.get(index)!,
      custom_events: customEvents.filter((event) => event.index === index).map(({ event }) => event),
    };
    const size = utf8Bytes(JSON.stringify(entry));
    if (bytes + size > budget) continue;
    bytes += size;
    done.push(entry);
  }
  return {
    iteration: input.iteration,
    finished: order.length,
    of: input.calls.length,
    call_ids: input.calls.map((call) => call.id),
    done,
  };
}

/** What the previous attempt finished, if its checkpoint belongs to this very batch. */
function resumedCalls(details: unknown, input: ToolBatchInput): ToolBatchCheckpoint['done'] {
  const parsed = ToolBatchCheckpoint.safeParse(details);
  if (!parsed.success) return [];
  const { iteration, call_ids: ids, done } = parsed.data;
  const same =
    iteration === input.iteration &&
    ids.length === input.calls.length &&
    ids.every((id, index) => id === input.calls[index]!.id);
  return same ? done.filter((entry) => entry.index < input.calls.length) : [];
}

/** One call of a batch and what it may use. */
interface CallScope {
  registry: AgentRegistry;
  limits: CallLimits;
  input: ToolBatchInput;
  call: ToolCallRequest;
  workflowId: string;
  batchSignal: AbortSignal;
  /** After the batch's abort, how long a call may still finish and keep its result. */
  graceMs: number;
  redactor: SecretRedactor | undefined;
  mcp: McpServers | undefined;
  progress: (update: McpProgress) => void;
  emit: (eventName: string, data: JsonObject) => void;
  started: number;
  /** The batch activity's attempt: above 1, calls the checkpoint lacks may have run in an earlier one. */
  attempt: number;
}

function callResult(scope: CallScope, content: string, success = true, error?: string): Finished {
  const { call, started } = scope;
  return {
    content,
    report: {
      tool_call_id: call.id,
      tool_name: call.name,
      success,
      ...(error !== undefined ? { error } : {}),
      duration_ms: Date.now() - started,
    },
  };
}

/**
 * One call (spec 7.6): unknown tools, arguments that do not parse or validate, and tools that throw
 * become error results the model sees. Null when the batch was aborted before it finished (or
 * StillRunning, when it may yet take effect).
 */
async function runCall(scope: CallScope): Promise<CallOutcome> {
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

/** A call an abort left running: cancelled, its marker and event saying why it may still take effect. */
function stillRunning(scope: CallScope, note: string): StillRunning {
  return { note, report: callResult(scope, '', false, note).report };
}

/**
 * The note of a call an abort left running, not known to be repeatable (a registered tool's, or an MCP
 * server's tool's): its cancellation marker and its `tool_call_error` event carry it.
 */
export function abortedCallNote(toolName: string, mcpServer?: string): string {
  return uncertainEffect(
    mcpServer === undefined
      ? `Tool '${toolName}' was still running when the run was aborted (it did not stop when told to), and ${notRepeatable('registered')}`
      : `Tool '${toolName}' (MCP server '${mcpServer}') was still running when the run was aborted (the server was told to cancel it), and ${notRepeatable('mcp')}`,
  );
}

/**
 * A call of an MCP server's tool, under the timeout (the server's, else the agent's) and the batch's
 * abort, which cancels the request on the server. The server is started first (within its
 * `start_timeout_seconds`), so the call's timeouts count from its request. A server that is unknown to
 * this worker, will not start, dies, times out or answers garbage gives the call an error result naming
 * the server; one that may have taken effect all the same says so, unless the tool is repeatable.
 */
async function runMcpTool(scope: CallScope, mcp: McpToolReference): Promise<CallOutcome> {
  const { call, registry, input, limits } = scope;
  const args = repairToolArguments(call.arguments);
  if (!args.ok)
    return callResult(scope, toolFailureContent(call.name, args.text, 'Tool arguments are not a valid JSON object'));
  const server = registry.mcpServer(input.agent, mcp.server);
  if (!server || !scope.mcp)
    return callResult(
      scope,
      toolFailureContent(call.name, args.text, `MCP server '${mcp.server}' is not configured on this worker`),
    );
  if (scope.attempt > 1 && !mcp.repeatable) return interruptedMcpCall(scope, mcp);
  const failed = (error: unknown, suffix = '') => {
    const message = `${mcpErrorMessage(mcp.server, error)}${suffix}`;
    return callResult(scope, toolFailureContent(call.name, args.text, scope.redactor?.redact(message) ?? message));
  };
  try {
    await raceAbort(scope.mcp.start(server), scope.batchSignal);
  } catch (error) {
    // Not sent yet: an abort meanwhile simply cancels it.
    return scope.batchSignal.aborted ? null : failed(error);
  }
  // As recorded with the tool (the batch's own timeout was set from them); older specs: as configured here.
  const { idleSeconds, totalSeconds } =
    mcp.idle_seconds !== undefined && mcp.total_seconds !== undefined
      ? { idleSeconds: mcp.idle_seconds, totalSeconds: mcp.total_seconds }
      : mcpCallLimits(server, limits.timeoutSeconds);
  const under = attemptSignal(scope.batchSignal, totalSeconds * 1000, idleSeconds * 1000, scope.graceMs);
  let sent = false;
  try {
    // The SDK's own timeouts stay above ours, so a timeout is always reported as ours.
    const result = await raceAbort(
      scope.mcp.callTool(server, mcp.tool, args.value, {
        // The server is told to stop (notifications/cancelled) when the call stops being waited for: a
        // call it finishes within the abort's grace keeps its result, as a registered tool's does.
        signal: under.waitUntil,
        timeoutMs: idleSeconds * 1000 + 5000,
        maxTotalTimeoutMs: totalSeconds * 1000 + 5000,
        // Reopening a session (or restarting a server that died) is not the server's silence: idle counts from here.
        onsent: () => {
          sent = true;
          under.progressed();
        },
        onprogress: ({ progress, total, message }) => {
          under.progressed();
          scope.progress({ progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) });
        },
      }),
      under.waitUntil,
    );
    return await mcpResult(scope, result, args.text);
  } catch (error) {
    // Sent and unanswered (or lost with its server), a call of a tool not marked repeatable may have run.
    const uncertain = sent && !mcp.repeatable && !answeredWithError(error);
    const tool = `Tool '${call.name}' (MCP server '${mcp.server}')`;
    if (scope.batchSignal.aborted)
      return uncertain ? stillRunning(scope, abortedCallNote(call.name, mcp.server)) : null;
    const timedOut = under.timedOut();
    if (timedOut) {
      const what =
        timedOut === 'idle'
          ? `${tool} timed out: no answer and no progress for ${idleSeconds} s`
          : `${tool} timed out after ${totalSeconds} s in all (max_call_seconds)`;
      const message = uncertain
        ? uncertainEffect(`${what}. The server was told to cancel it, but ${notRepeatable('mcp')}`)
        : what;
      return callResult(scope, toolStepErrorContent(message), false, message);
    }
    if (!uncertain) return failed(error);
    return failed(error, `. ${uncertainEffect(`The call had been sent, and ${notRepeatable('mcp')}`)}`);
  } finally {
    under.release();
  }
}

/** An MCP call's error as the model reads it, naming the server. */
function mcpErrorMessage(server: string, error: unknown): string {
  return error instanceof McpServerError
    ? error.message
    : `MCP server '${server}' failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Whether the server answered the call, with an error (a JSON-RPC error response, or an answer the SDK
 * refused): the call ended there. A closed connection or a timeout is no answer.
 */
function answeredWithError(error: unknown): boolean {
  const cause = error instanceof McpServerError && error.cause !== undefined ? error.cause : error;
  return (
    cause instanceof McpError && cause.code !== ErrorCode.ConnectionClosed && cause.code !== ErrorCode.RequestTimeout
  );
}

/** An MCP call's result as the model receives it: text, images the multimodal way, `isError` as an error. */
async function mcpResult(scope: CallScope, result: McpCallResult, argumentText: string): Promise<Finished> {
  const { call, limits } = scope;
  const read = readMcpResult(result);
  if (read.isError) return callResult(scope, toolFailureContent(call.name, argumentText, read.text || 'error'));
  if (read.images.length > 0) {
    const images = read.images.map((url) => imageUrl(url));
    return toolOutcome(scope, read.text ? describedImages(read.text, images) : images, argumentText);
  }
  // Text as the server wrote it (a defineTool string becomes a JSON literal; an MCP result is text already).
  const bytes = utf8Bytes(read.text);
  if (bytes > limits.maxResultBytes) {
    const reason = `result is too large: ${bytes} bytes (limit ${limits.maxResultBytes})`;
    return callResult(scope, toolFailureContent(call.name, argumentText, reason));
  }
  return callResult(scope, read.text);
}

/**
 * A call an earlier attempt of the batch started but did not finish (its worker crashed or shut down):
 * sent again only when the server marks the tool read-only or idempotent (`mcp.repeatable`). Otherwise
 * the model learns the truth, that the call may or may not have taken effect, instead of a second one.
 */
function interruptedMcpCall(scope: CallScope, mcp: McpToolReference): Finished {
  const message = interruptedMcpMessage(scope.call.name, mcp.server);
  return callResult(scope, toolStepErrorContent(message), false, message);
}

/** What the model is told about a non-repeatable MCP call a retried batch found unfinished. */
export function interruptedMcpMessage(toolName: string, serverName: string): string {
  return uncertainEffect(
    `Tool '${toolName}' (MCP server '${serverName}') was interrupted: an earlier attempt of its batch ` +
      `did not report a result for it (its worker stopped or lost contact), and ${notRepeatable('mcp')}, so it ` +
      'was not sent again',
  );
}

/** A tool's value as its result: images become a multimodal patch; text above the size limit an error. */
async function toolOutcome(scope: CallScope, value: unknown, argumentText: string): Promise<Finished> {
  const { call, limits } = scope;
  if (isMultimodalResult(value)) {
    try {
      const multimodal = await multimodalMutation(call, value, limits.maxImageBytes);
      const finished = callResult(scope, '');
      return { ...finished, report: { ...finished.report, result: describeImages(value) }, multimodal };
    } catch (error) {
      if (error instanceof ImageError)
        return callResult(scope, toolFailureContent(call.name, argumentText, error.message));
      throw error;
    }
  }
  const content = serializeToolResult(value);
  const bytes = utf8Bytes(content);
  if (bytes > limits.maxResultBytes) {
    const reason = `result is too large: ${bytes} bytes (limit ${limits.maxResultBytes})`;
    return callResult(scope, toolFailureContent(call.name, argumentText, reason));
  }
  return callResult(scope, content);
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

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Waits, or less when the signal aborts first. */
function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The batch result within the budget: its largest results, one by one, become error results. Declared
 * order is kept: plain results first, multimodal ones last (a replaced multimodal result is plain now).
 */
function withinBudget(result: ToolBatchResult, calls: readonly ToolCallRequest[], budget: number): ToolBatchResult {
  const replaced = new Map<string, Mutation>();
  const current = () => {
    const mutations = result.mutations.map(
      (mutation) => ('tool_call_id' in mutation && replaced.get(mutation.tool_call_id)) || mutation,
    );
    const order = new Map(calls.map((call, index) => [call.id, index]));
    const position = (mutation: Mutation) => ('tool_call_id' in mutation ? (order.get(mutation.tool_call_id) ?? 0) : 0);
    const plain = mutations
      .filter((mutation) => mutation.type !== 'MultimodalToolResultMutation')
      .sort((a, b) => position(a) - position(b));
    return {
      ...result,
      mutations: [...plain, ...mutations.filter((mutation) => mutation.type === 'MultimodalToolResultMutation')],
    };
  };
  for (let batch = current(), bytes = utf8Bytes(JSON.stringify(batch)); bytes > budget;) {
    const candidates = batch.mutations.filter(
      (mutation) =>
        (mutation.type === 'ToolResultMutation' || mutation.type === 'MultimodalToolResultMutation') &&
        !replaced.has(mutation.tool_call_id),
    );
    const largest = candidates.sort((a, b) => JSON.stringify(b).length - JSON.stringify(a).length)[0];
    if (!largest || !('tool_call_id' in largest)) break;
    const message = `the batch's results are ${bytes} bytes together, over the ${budget}-byte budget of one payload; this result was the largest`;
    replaced.set(largest.tool_call_id, {
      type: 'ToolResultMutation',
      tool_call_id: largest.tool_call_id,
      content: toolStepErrorContent(message),
    });
    batch = current();
    bytes = utf8Bytes(JSON.stringify(batch));
  }
  return current();
}

/**
 * Declared order: plain results and cancellations, then multimodal results (spec 7.6 step 5). Reports in
 * completion order, then those of calls an abort left running (their cancellation says so).
 */
function batchResult(
  calls: readonly ToolCallRequest[],
  {
    finished,
    order,
    stillRunning,
  }: { finished: Map<number, Finished>; order: number[]; stillRunning: Map<number, StillRunning> },
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
      mutations.push(cancelledCallMutation(call, stillRunning.get(index)?.note));
    }
  }
  return {
    outcome: wasAborted || unfinished.length > 0 ? 'aborted' : 'completed',
    mutations: [...mutations, ...multimodal],
    reports: [
      ...order.map((id) => finished.get(id)!.report),
      ...[...stillRunning.values()].map((entry) => entry.report),
    ],
    unfinished,
    intents,
  };
}
