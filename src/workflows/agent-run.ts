import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { z } from 'zod';
import type { Activities } from '../activities';
import {
  argumentsForEvents,
  asMessages,
  cloneJson,
  compileInvocationTurn,
  ContextError,
  resultForEvents,
  toolStepErrorContent,
  validateToolLinkage,
  type JsonObject,
  type JsonValue,
  type Mutation,
  type PromptContract,
  type ToolCall,
} from '../context';
import {
  addUsage,
  AgentRunInput,
  digestText,
  promptContractFor,
  replyContent,
  replyToolCalls,
  providerTools,
  REQUEST_PAGE_CHARS,
  seedTranscript,
  type AgentRunResult,
  type AgentSpec,
  type LlmPhaseResult,
  type ToolBatchResult,
  type ToolCallRequest,
} from '../runtime';
import { abortSignal, compiledRequestQuery, statusQuery, transcriptQuery, userMessageSignal } from './definitions';
import { collectUserMessages, commit, emit, newRun, requestAbort, type Run } from './run-state';
import { sinks } from './sinks';

const NON_RETRYABLE_PROVIDER_ERRORS = ['ProviderRejected', 'ProviderAuthFailed', 'ContextTooLong', 'InvalidLlmRequest', 'UnknownAgent'];

/**
 * A durable ReAct run (spec section 7). Each iteration commits pending patches, compiles the request
 * with the pure core, runs the LLM phase and, when the model asked for tools, the tool batch; both are
 * activities that return patches. An `abort` signal turns into abort patches, so the transcript stays
 * valid however the run ends.
 */
export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const input = parseInput(rawInput);
  const run = newRun(input.agent);
  registerHandlers(run);
  try {
    const agent = await resolveAgent(input.agent);
    run.selfref = agent.selfref;
    commit(run, [{ type: 'ContextReplaceMutation', messages: checkedSeed(agent, input) }]);
    emit(run, { event_type: 'react_start', agent: agent.name, user_task_prompt: input.input, available_tools: agent.tools });
    const loop = new AgentLoop(run, agent, input);
    return await loop.execute();
  } catch (error) {
    run.state = 'failed';
    throw asRunFailure(error);
  }
}

function parseInput(raw: unknown): AgentRunInput {
  const parsed = AgentRunInput.safeParse(raw);
  if (!parsed.success) throw ApplicationFailure.nonRetryable(`invalid agentRun input: ${z.prettifyError(parsed.error)}`, 'InvalidRunInput');
  return parsed.data;
}

function checkedSeed(agent: AgentSpec, input: AgentRunInput) {
  const seed = seedTranscript(agent.instructions, asMessages(input.history ?? []), input.input);
  try {
    validateToolLinkage(seed);
  } catch (error) {
    throw ApplicationFailure.nonRetryable(`invalid agentRun input: history: ${(error as Error).message}`, 'InvalidRunInput');
  }
  return seed;
}

async function resolveAgent(name: string): Promise<AgentSpec> {
  const { describeAgent } = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['UnknownAgent'] },
  });
  return describeAgent(name);
}

function registerHandlers(run: Run): void {
  setHandler(abortSignal, (payload) => requestAbort(run, payload?.reason));
  setHandler(userMessageSignal, (payload) => {
    if (run.state !== 'running' || typeof payload?.content !== 'string') return;
    run.inbox.push(payload.content);
    emit(run, { event_type: 'user_message_received', content: payload.content });
  });
  setHandler(transcriptQuery, () => run.transcript);
  setHandler(statusQuery, (options) => ({
    state: run.state,
    agent: run.agent,
    iteration: run.iteration,
    llm_calls: run.llmCalls,
    tool_calls: run.toolCalls,
    usage: run.usage,
    abort_requested: run.abort.requested,
    abort_reason: run.abort.reason,
    queued_user_messages: run.inbox.length,
    history: { events: workflowInfo().historyLength, bytes: workflowInfo().historySize },
    events: run.events.filter((event) => event.seq > (options?.after ?? 0)),
  }));
  setHandler(compiledRequestQuery, (digest, page) => {
    if (run.request?.digest !== digest) throw new Error(`no compiled request with digest ${digest}`);
    const pages = Math.max(1, Math.ceil(run.request.text.length / REQUEST_PAGE_CHARS));
    if (!Number.isInteger(page) || page < 0 || page >= pages) throw new Error(`page ${page} out of range (0..${pages - 1})`);
    const text = run.request.text.slice(page * REQUEST_PAGE_CHARS, (page + 1) * REQUEST_PAGE_CHARS);
    return { digest, page, pages, text };
  });
}

/** Failures that end the run: readable, typed and non-retryable, so nothing is left stuck. */
function asRunFailure(error: unknown): unknown {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof ContextError) return ApplicationFailure.nonRetryable(error.message, 'InvalidTranscript');
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    const type = cause instanceof ApplicationFailure ? (cause.type ?? 'PhaseFailed') : 'PhaseFailed';
    return ApplicationFailure.nonRetryable(`${error.activityType} failed: ${cause?.message ?? error.message}`, type);
  }
  return error;
}

type LlmMode = { withTools: boolean; stream: boolean };

class AgentLoop {
  private readonly contract: PromptContract;
  private readonly tools: JsonObject[];
  private readonly maxToolCalls: number | null;
  private readonly activities: Pick<Activities, 'llmPhase' | 'toolBatch'>;

  constructor(
    private readonly run: Run,
    private readonly agent: AgentSpec,
    private readonly input: AgentRunInput,
  ) {
    this.contract = promptContractFor(agent);
    this.tools = providerTools(agent);
    this.maxToolCalls = input.max_tool_calls !== undefined ? input.max_tool_calls : agent.max_tool_calls;
    this.activities = phaseActivities(agent);
  }

  async execute(): Promise<AgentRunResult> {
    const run = this.run;
    for (let it = 0; ; it += 1) {
      run.iteration = it;
      commit(run, [...run.pending.splice(0), ...collectUserMessages(run)]);
      if (it > 0) emit(run, { event_type: 'react_iteration_start' });
      const llm = await this.llmPhase({ withTools: this.tools.length > 0, stream: this.agent.stream }, it);
      if (llm.outcome === 'aborted') return this.finish(llm.mutations, 'aborted', replyContent(llm), it);
      const calls = requestedCalls(llm);
      if (calls.length === 0) {
        // A message that arrived while the model answered is not dropped: the run goes on with it.
        if (run.inbox.length > 0 && !run.abort.requested) {
          commit(run, llm.mutations);
          continue;
        }
        return this.finish(llm.mutations, 'completed', replyContent(llm), it);
      }
      if (this.maxToolCalls !== null && run.toolCalls + calls.length > this.maxToolCalls) {
        // Spec 7.5: the batch and its tool-call message are dropped; one last call without tools.
        const last = await this.llmPhase({ withTools: false, stream: false }, it + 1);
        return this.finish(last.mutations, last.outcome === 'aborted' ? 'aborted' : 'completed', replyContent(last), it + 1, last.outcome !== 'aborted');
      }
      const batch = await this.toolPhase(calls, it + 1);
      run.toolCalls += calls.length;
      if (batch.outcome === 'aborted') return this.finish([...llm.mutations, ...batch.mutations], 'aborted', replyContent(llm), it + 1);
      commit(run, [...llm.mutations, ...batch.mutations]);
      emit(run, { event_type: 'react_iteration_end', tool_calls_count: calls.length }, it + 1);
    }
  }

  private async llmPhase(mode: LlmMode, eventIteration: number): Promise<LlmPhaseResult> {
    const run = this.run;
    run.llmCalls += 1;
    const llmCall = run.llmCalls;
    const request = this.compileRequest(mode);
    emit(run, { event_type: 'llm_call_start', llm_call: llmCall, stream: mode.stream, message_count: request.messages.length, with_tools: mode.withTools }, eventIteration);
    let result: LlmPhaseResult;
    if (run.abort.requested) {
      result = abortedLlmPhase('');
    } else {
      try {
        result = await inPhaseScope(run, this.agent, () =>
          this.activities.llmPhase({
            agent: this.agent.name,
            iteration: eventIteration,
            digest: run.request!.digest,
            ...(this.input.request_transport === 'inline' ? { request } : {}),
          }),
        );
      } catch (error) {
        // After an abort, a phase that hands back nothing (cancelled early, dead worker) still ends cleanly.
        if (!run.abort.requested) throw error;
        result = abortedLlmPhase('');
      }
    }
    run.request = null;
    result = withAbortReason(result, run.abort.reason);
    run.usage = addUsage(run.usage, result.usage);
    emit(
      run,
      {
        event_type: 'llm_call_end',
        llm_call: llmCall,
        outcome: result.outcome,
        content: replyContent(result),
        tool_calls: result.partial_tool_calls ?? replyToolCalls(result).map((call) => ({ id: call.id, name: call.function.name })),
        usage: result.usage,
        duration_ms: result.duration_ms,
      },
      eventIteration,
    );
    return result;
  }

  private compileRequest(mode: LlmMode) {
    const compiled = compileInvocationTurn(this.contract, this.run.transcript, [], this.run.snapshot);
    const options: JsonObject = { ...this.agent.llm_options };
    if (!mode.withTools) delete options['tool_choice'];
    const request = {
      ...options,
      model: this.agent.model,
      messages: compiled.llm_messages,
      ...(mode.withTools ? { tools: this.tools } : {}),
      stream: mode.stream,
      ...(mode.stream ? { stream_options: { include_usage: true } } : {}),
    };
    const text = JSON.stringify(request);
    this.run.request = { digest: digestText(text), text };
    return request;
  }

  private async toolPhase(calls: ToolCallRequest[], eventIteration: number): Promise<ToolBatchResult> {
    const run = this.run;
    emit(run, { event_type: 'tool_calls_batch_start', batch_size: calls.length, tool_calls: calls.map(({ id, name }) => ({ id, name })) }, eventIteration);
    for (const call of calls) {
      emit(run, { event_type: 'tool_call_start', tool_name: call.name, tool_call_id: call.id, arguments: argumentsForEvents(call.arguments) }, eventIteration);
    }
    let batch: ToolBatchResult;
    if (run.abort.requested) {
      batch = cancelledBatch(calls);
    } else {
      try {
        batch = await inPhaseScope(run, this.agent, () => this.activities.toolBatch({ agent: this.agent.name, iteration: eventIteration, calls }));
      } catch (error) {
        batch = run.abort.requested ? cancelledBatch(calls) : failedBatch(calls, error);
      }
    }
    batch = withCancelReason(batch, run.abort.reason);
    const contents = new Map(batch.mutations.flatMap((mutation) => (mutation.type === 'ToolResultMutation' ? [[mutation.tool_call_id, mutation.content] as const] : [])));
    for (const report of batch.reports) {
      emit(
        run,
        report.success
          ? { event_type: 'tool_call_end', tool_name: report.tool_name, tool_call_id: report.tool_call_id, ...eventResult(contents.get(report.tool_call_id) ?? ''), success: true, duration_ms: report.duration_ms }
          : { event_type: 'tool_call_error', tool_name: report.tool_name, tool_call_id: report.tool_call_id, error: report.error ?? '', duration_ms: report.duration_ms },
        eventIteration,
      );
    }
    const successes = batch.reports.filter((report) => report.success).length;
    emit(
      run,
      { event_type: 'tool_calls_batch_end', batch_size: calls.length, success_count: successes, error_count: batch.reports.length - successes, cancelled: batch.unfinished },
      eventIteration,
    );
    return batch;
  }

  private finish(mutations: Mutation[], status: 'completed' | 'aborted', finalResponse: string, iterations: number, markAborted = true): AgentRunResult {
    const run = this.run;
    commit(run, mutations);
    const aborted = status === 'aborted';
    emit(
      run,
      {
        event_type: 'react_end',
        status,
        final_response: finalResponse,
        total_iterations: iterations,
        total_llm_calls: run.llmCalls,
        total_tool_calls: run.toolCalls,
        total_token_usage: run.usage,
        ...(aborted && markAborted ? { aborted: true as const, abort_reason: run.abort.reason } : {}),
      },
      iterations,
    );
    run.state = status;
    sinks.patchloop.runEnded({ status, transcriptDigest: digestText(JSON.stringify(run.transcript)), llmCalls: run.llmCalls, toolCalls: run.toolCalls });
    return {
      status,
      answer: aborted ? null : finalResponse,
      transcript: cloneJson(run.transcript),
      usage: run.usage,
      ...(aborted ? { abort_reason: run.abort.reason } : {}),
    };
  }
}

function phaseActivities(agent: AgentSpec): Pick<Activities, 'llmPhase' | 'toolBatch'> {
  const limits = agent.limits;
  const common = {
    heartbeatTimeout: `${limits.heartbeat_timeout_seconds}s`,
    // Omitted, this silently means TRY_CANCEL and the partial results of an abort are lost.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  } as const;
  const { llmPhase } = proxyActivities<Activities>({
    ...common,
    startToCloseTimeout: `${limits.llm_timeout_seconds}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s', maximumAttempts: limits.llm_max_attempts, nonRetryableErrorTypes: NON_RETRYABLE_PROVIDER_ERRORS },
  });
  const slowestTool = Math.max(limits.tool_timeout_seconds, ...agent.tool_descriptors.map((tool) => tool.timeout_seconds ?? 0));
  const { toolBatch } = proxyActivities<Activities>({
    ...common,
    startToCloseTimeout: `${slowestTool + 30}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: limits.tool_batch_max_attempts },
  });
  return { llmPhase, toolBatch };
}

/**
 * Runs one phase in its own cancellation scope, so an abort cancels exactly this phase. After an abort
 * the wait for the phase's partial result is bounded: a phase on a dead worker must not hold the run.
 */
async function inPhaseScope<T>(run: Run, agent: AgentSpec, start: () => Promise<T>): Promise<T> {
  const scope = new CancellationScope();
  const deadlineScope = new CancellationScope();
  run.phase = scope;
  const phase = scope.run(start);
  const deadline = deadlineScope.run(async (): Promise<never> => {
    await condition(() => run.abort.requested);
    await sleep(`${agent.limits.abort_wait_seconds}s`);
    throw ApplicationFailure.nonRetryable('the phase did not hand back its results in time after the abort', 'AbortWaitExpired');
  });
  try {
    return await Promise.race([phase, deadline]);
  } finally {
    run.phase = null;
    deadlineScope.cancel();
    deadline.catch(() => undefined);
    phase.catch(() => undefined);
  }
}

function requestedCalls(result: LlmPhaseResult): ToolCallRequest[] {
  return replyToolCalls(result).map((call: ToolCall) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }));
}

const EVENT_RESULT_CHARS = 1024;

/** The event log keeps small results whole and a preview of large ones: it lives in workflow memory. */
function eventResult(content: string): { result: JsonValue; result_truncated?: true } {
  if (content.length <= EVENT_RESULT_CHARS) return { result: resultForEvents(content) };
  return { result: content.slice(0, EVENT_RESULT_CHARS), result_truncated: true };
}

function abortedLlmPhase(partial: string): LlmPhaseResult {
  return {
    outcome: 'aborted',
    mutations: [{ type: 'AssistantTruncatedMutation', partial_content: partial, abort_reason: '' }],
    usage: null,
    finish_reason: null,
    duration_ms: 0,
  };
}

function withAbortReason(result: LlmPhaseResult, reason: string): LlmPhaseResult {
  return {
    ...result,
    mutations: result.mutations.map((mutation) => (mutation.type === 'AssistantTruncatedMutation' ? { ...mutation, abort_reason: reason } : mutation)),
  };
}

function withCancelReason(batch: ToolBatchResult, reason: string): ToolBatchResult {
  return {
    ...batch,
    mutations: batch.mutations.map((mutation) => (mutation.type === 'ToolCancelledMutation' ? { ...mutation, abort_reason: reason } : mutation)),
  };
}

/** Spec 8.2: an abort before the batch starts runs nothing; every call gets a cancellation result. */
function cancelledBatch(calls: readonly ToolCallRequest[]): ToolBatchResult {
  return {
    outcome: 'aborted',
    mutations: calls.map((call) => ({ type: 'ToolCancelledMutation', tool_call_id: call.id, tool_name: call.name, abort_reason: '' })),
    reports: [],
    unfinished: calls.map((call) => call.id),
  };
}

/** Spec 7.6, failure of the step itself: the model sees the error and the run goes on. */
function failedBatch(calls: readonly ToolCallRequest[], error: unknown): ToolBatchResult {
  const message = error instanceof ActivityFailure && error.cause ? error.cause.message : error instanceof Error ? error.message : String(error);
  return {
    outcome: 'completed',
    mutations: calls.map((call) => ({ type: 'ToolResultMutation', tool_call_id: call.id, content: toolStepErrorContent(message) })),
    reports: calls.map((call) => ({ tool_call_id: call.id, tool_name: call.name, success: false, error: message, duration_ms: 0 })),
    unfinished: [],
  };
}
