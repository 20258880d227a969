import { ActivityCancellationType, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_PROVIDER_ERRORS } from '../common';
import {
  argumentsForEvents,
  compileInvocationTurn,
  resultForEvents,
  type JsonObject,
  type JsonValue,
  type Mutation,
  type PromptContract,
} from '../context';
import {
  addUsage,
  collectSelfRefMutations,
  digestText,
  promptContractFor,
  providerTools,
  queueIntent,
  replyContent,
  replyToolCalls,
  SELFREF_FORK,
  type AgentSpec,
  type LlmPhaseResult,
  type ToolBatchResult,
  type ToolCallReport,
  type ToolCallRequest,
} from '../runtime';
import {
  cancelledBatch,
  EMPTY_BATCH,
  failedBatch,
  mergeBatches,
  withCancelReason,
  type WorkflowCallResult,
} from './batch';
import { runFork } from './forks';
import { inPhaseScope } from './phase-scope';
import { commit, deliverChildSignals, emit, userMessageMutation, type Run } from './run-state';

const EVENT_RESULT_CHARS = 1024;

export interface LoopOptions {
  transport: 'query' | 'inline';
  /** Budget of tool calls per turn (spec 7.5); null is unlimited. */
  maxToolCalls: number | null;
  /**
   * Whether queued user messages join this turn at its compile boundaries (a run), or wait for turns of
   * their own (a session).
   */
  foldInbox: boolean;
  /** Overrides the chat-agent prompt contract (typed functions use the function preset). */
  contract?: PromptContract;
  /** A typed LLM function whose output schema checks final replies. */
  outputCheck?: string;
}

export interface TurnResult {
  status: 'completed' | 'aborted';
  /** The final answer; null when aborted. */
  answer: string | null;
  /** Spec 7.10: the text of the turn's last LLM call (the partial text after an abort). */
  finalResponse: string;
  /** For typed functions: the final reply checked against the output schema. */
  outputCheck?: LlmPhaseResult['output_check'];
}

type LlmMode = { withTools: boolean; stream: boolean };

/**
 * The ReAct loop (spec 7.3) over a durable `Run`: each iteration commits pending patches, compiles the
 * request with the pure core, runs the LLM phase and, when the model asked for tools, the tool batch.
 * One `turn()` runs until a final answer, the tool budget or an abort.
 */
export class AgentLoop {
  private readonly contract: PromptContract;
  private readonly tools: JsonObject[];
  private readonly activities: Pick<Activities, 'llmPhase' | 'toolBatch'>;

  constructor(
    private readonly run: Run,
    private readonly agent: AgentSpec,
    private readonly options: LoopOptions,
  ) {
    this.contract = options.contract ?? promptContractFor(agent);
    this.tools = providerTools(agent);
    this.activities = phaseActivities(agent);
  }

  /** The request the next LLM call would receive now, as JSON text (for byte-identity checks). */
  previewRequest(): string {
    return JSON.stringify(this.buildRequest({ withTools: this.tools.length > 0, stream: this.agent.stream }));
  }

  async turn(): Promise<TurnResult> {
    const run = this.run;
    let toolCalls = 0;
    for (let first = true; ; first = false) {
      const it = run.iteration;
      commit(run, [...run.pending.splice(0), ...this.collectHooks()]);
      if (!first) emit(run, { event_type: 'react_iteration_start' });
      const llm = await this.llmPhase({ withTools: this.tools.length > 0, stream: this.agent.stream }, it);
      if (llm.outcome === 'aborted') return this.finish(llm.mutations, 'aborted', replyContent(llm), it);
      const calls = requestedCalls(llm);
      if (calls.length === 0) {
        // A message that arrived while the model answered is not dropped: the run goes on with it.
        if (this.goesOnWithInbox()) {
          commit(run, llm.mutations);
          continue;
        }
        return {
          ...this.finish(llm.mutations, 'completed', replyContent(llm), it),
          ...(llm.output_check ? { outputCheck: llm.output_check } : {}),
        };
      }
      if (this.options.maxToolCalls !== null && toolCalls + calls.length > this.options.maxToolCalls) {
        // Spec 7.5: the batch and its tool-call message are dropped; one last call without tools.
        const last = await this.llmPhase({ withTools: false, stream: false }, it + 1);
        // Runs recorded before this ended here with the message unread: they replay as they ran.
        if (last.outcome !== 'aborted' && this.goesOnWithInbox() && patched('budget-call-goes-on-with-inbox')) {
          // A message that arrived meanwhile gets an iteration of its own, as after any final answer.
          commit(run, last.mutations);
          run.iteration = it + 2;
          continue;
        }
        return this.finish(
          last.mutations,
          last.outcome === 'aborted' ? 'aborted' : 'completed',
          replyContent(last),
          it + 1,
          last.outcome !== 'aborted',
        );
      }
      const batch = await this.toolPhase(calls, it + 1);
      toolCalls += calls.length;
      run.toolCalls += calls.length;
      run.iteration = it + 1;
      if (batch.outcome === 'aborted')
        return this.finish([...llm.mutations, ...batch.mutations], 'aborted', replyContent(llm), it + 1);
      commit(run, [...llm.mutations, ...batch.mutations]);
      emit(run, { event_type: 'react_iteration_end', tool_calls_count: calls.length });
    }
  }

  /** A run (not a session) with messages waiting and no abort goes on instead of finishing. */
  private goesOnWithInbox(): boolean {
    return this.options.foldInbox && this.run.inbox.length > 0 && !this.run.abort.requested;
  }

  /** Step 1 hooks, in registration order: the SelfRef queue (6.2), then queued user messages. */
  private collectHooks(): Mutation[] {
    const selfref = collectSelfRefMutations(this.run.selfrefQueue);
    const messages = this.options.foldInbox
      ? this.run.inbox.splice(0).map((entry) => userMessageMutation(entry.content))
      : [];
    return [...selfref, ...messages];
  }

  private async llmPhase(mode: LlmMode, eventIteration: number): Promise<LlmPhaseResult> {
    const run = this.run;
    run.llmCalls += 1;
    const llmCall = run.llmCalls;
    const request = this.buildRequest(mode);
    const text = JSON.stringify(request);
    run.request = { digest: digestText(text), text };
    emit(
      run,
      {
        event_type: 'llm_call_start',
        llm_call: llmCall,
        stream: mode.stream,
        message_count: request.messages.length,
        with_tools: mode.withTools,
      },
      eventIteration,
    );
    let result: LlmPhaseResult;
    if (run.abort.requested) {
      result = abortedLlmPhase();
    } else {
      try {
        result = await inPhaseScope(run, this.agent.limits.abort_wait_seconds, () =>
          this.activities.llmPhase({
            agent: this.agent.name,
            iteration: eventIteration,
            llm_call: llmCall,
            digest: run.request!.digest,
            ...(this.options.transport === 'inline' ? { request } : {}),
            ...(this.options.outputCheck ? { output_check: this.options.outputCheck } : {}),
          }),
        );
      } catch (error) {
        // After an abort, a phase that hands back nothing (cancelled early, dead worker) still ends cleanly.
        if (!run.abort.requested) throw error;
        result = abortedLlmPhase();
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
        tool_calls:
          result.partial_tool_calls ??
          replyToolCalls(result).map((call) => ({ id: call.id, name: call.function.name })),
        usage: result.usage,
        duration_ms: result.duration_ms,
      },
      eventIteration,
    );
    return result;
  }

  private buildRequest(mode: LlmMode) {
    const compiled = compileInvocationTurn(this.contract, this.run.transcript, [], this.run.snapshot);
    const options: JsonObject = { ...this.agent.llm_options };
    if (!mode.withTools) delete options['tool_choice'];
    return {
      ...options,
      model: this.agent.model,
      messages: compiled.llm_messages,
      ...(mode.withTools ? { tools: this.tools } : {}),
      stream: mode.stream,
      ...(mode.stream ? { stream_options: { include_usage: true } } : {}),
    };
  }

  private async toolPhase(calls: ToolCallRequest[], eventIteration: number): Promise<ToolBatchResult> {
    const run = this.run;
    emit(
      run,
      {
        event_type: 'tool_calls_batch_start',
        batch_size: calls.length,
        tool_calls: calls.map(({ id, name }) => ({ id, name })),
      },
      eventIteration,
    );
    for (const call of calls) {
      emit(
        run,
        {
          event_type: 'tool_call_start',
          tool_name: call.name,
          tool_call_id: call.id,
          arguments: argumentsForEvents(call.arguments),
        },
        eventIteration,
      );
    }
    const batch = withCancelReason(
      run.abort.requested ? cancelledBatch(calls) : await this.runBatch(calls, eventIteration),
      run.abort.reason,
    );
    const byId = new Map(
      batch.mutations.flatMap((mutation) =>
        mutation.type === 'ToolResultMutation' ? [[mutation.tool_call_id, mutation.content] as const] : [],
      ),
    );
    for (const report of batch.reports) {
      // Spec 7.6: as each call completes, the custom events it queued, then its end event.
      for (const custom of batch.custom_events ?? []) {
        if (custom.tool_call_id === report.tool_call_id)
          emit(
            run,
            {
              event_type: 'custom_event',
              event_name: custom.event_name,
              data: custom.data,
              tool_name: custom.tool_name,
              tool_call_id: custom.tool_call_id,
            },
            eventIteration,
          );
      }
      emit(
        run,
        report.success
          ? {
              event_type: 'tool_call_end',
              tool_name: report.tool_name,
              tool_call_id: report.tool_call_id,
              ...eventResult(byId.get(report.tool_call_id) ?? ''),
              success: true,
              duration_ms: report.duration_ms,
            }
          : {
              event_type: 'tool_call_error',
              tool_name: report.tool_name,
              tool_call_id: report.tool_call_id,
              error: report.error ?? '',
              duration_ms: report.duration_ms,
            },
        eventIteration,
      );
    }
    // Intents of finished calls queue in declared order; cancelled calls queue nothing (6.2).
    for (const record of batch.intents)
      if (!batch.unfinished.includes(record.tool_call_id)) queueIntent(run.selfrefQueue, record.intent);
    const successes = batch.reports.filter((report) => report.success).length;
    emit(
      run,
      {
        event_type: 'tool_calls_batch_end',
        batch_size: calls.length,
        success_count: successes,
        error_count: batch.reports.length - successes,
        cancelled: batch.unfinished,
      },
      eventIteration,
    );
    return batch;
  }

  /** The activity runs the tools; the workflow runs forks as child workflows, concurrently with it. */
  private async runBatch(calls: ToolCallRequest[], eventIteration: number): Promise<ToolBatchResult> {
    const run = this.run;
    const isFork = (call: ToolCallRequest) => this.agent.selfref && call.name === SELFREF_FORK;
    const activityCalls = calls.filter((call) => !isFork(call));
    const forkCalls = calls.filter(isFork);
    const reports: ToolCallReport[] = [];
    try {
      const [activity, ...forks] = await inPhaseScope(run, this.agent.limits.abort_wait_seconds, () =>
        Promise.all([
          activityCalls.length === 0
            ? Promise.resolve(EMPTY_BATCH)
            : this.activities
                .toolBatch({
                  agent: this.agent.name,
                  iteration: eventIteration,
                  calls: activityCalls,
                  run_chain_id: workflowInfo().firstExecutionRunId,
                })
                .then(
                  (result) => {
                    reports.push(...result.reports);
                    return result;
                  },
                  (error: unknown) =>
                    run.abort.requested ? cancelledBatch(activityCalls) : failedBatch(activityCalls, error),
                ),
          ...forkCalls.map((call) =>
            runFork(run, this.agent, call, eventIteration).then(
              (result) => {
                reports.push(result.report);
                return result;
              },
              () => null,
            ),
          ),
        ]),
      );
      await deliverChildSignals(run);
      const own = (forks as Array<WorkflowCallResult | null>).filter(
        (fork): fork is WorkflowCallResult => fork !== null,
      );
      return mergeBatches(calls, activity as ToolBatchResult, own, reports);
    } catch (error) {
      await deliverChildSignals(run);
      if (run.abort.requested) return cancelledBatch(calls);
      throw error;
    }
  }

  private finish(
    mutations: Mutation[],
    status: 'completed' | 'aborted',
    finalResponse: string,
    iteration: number,
    markAborted = true,
  ): TurnResult {
    const run = this.run;
    commit(run, mutations);
    run.iteration = iteration + 1;
    emit(
      run,
      {
        event_type: 'react_end',
        status,
        final_response: finalResponse,
        total_iterations: iteration,
        total_llm_calls: run.llmCalls,
        total_tool_calls: run.toolCalls,
        total_token_usage: run.usage,
        ...(status === 'aborted' && markAborted ? { aborted: true as const, abort_reason: run.abort.reason } : {}),
      },
      iteration,
    );
    return { status, answer: status === 'aborted' ? null : finalResponse, finalResponse };
  }
}

function phaseActivities(agent: AgentSpec): Pick<Activities, 'llmPhase' | 'toolBatch'> {
  const limits = agent.limits;
  const common = {
    heartbeatTimeout: `${limits.heartbeat_timeout_seconds}s`,
    // Omitted, this silently means TRY_CANCEL and the partial results of an abort are lost.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  } as const;
  // Provider unavailability retries for a time budget, not a handful of attempts: a durable run outlasts
  // an outage. The budget covers every attempt and the backoff between them.
  const { llmPhase } = proxyActivities<Activities>({
    ...common,
    startToCloseTimeout: `${limits.llm_timeout_seconds}s`,
    scheduleToCloseTimeout: `${limits.llm_retry_budget_seconds}s`,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '60s',
      ...(limits.llm_max_attempts !== null ? { maximumAttempts: limits.llm_max_attempts } : {}),
      nonRetryableErrorTypes: NON_RETRYABLE_PROVIDER_ERRORS,
    },
  });
  const slowestTool = Math.max(
    limits.tool_timeout_seconds,
    ...agent.tool_descriptors.map((tool) => tool.timeout_seconds ?? 0),
  );
  const { toolBatch } = proxyActivities<Activities>({
    ...common,
    startToCloseTimeout: `${slowestTool + 30}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: limits.tool_batch_max_attempts },
  });
  return { llmPhase, toolBatch };
}

function requestedCalls(result: LlmPhaseResult): ToolCallRequest[] {
  return replyToolCalls(result).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
}

function abortedLlmPhase(): LlmPhaseResult {
  return {
    outcome: 'aborted',
    mutations: [{ type: 'AssistantTruncatedMutation', partial_content: '', abort_reason: '' }],
    usage: null,
    finish_reason: null,
    duration_ms: 0,
  };
}

function withAbortReason(result: LlmPhaseResult, reason: string): LlmPhaseResult {
  return {
    ...result,
    mutations: result.mutations.map((mutation) =>
      mutation.type === 'AssistantTruncatedMutation' ? { ...mutation, abort_reason: reason } : mutation,
    ),
  };
}

/** The event log keeps small results whole and a preview of large ones: it lives in workflow memory. */
function eventResult(content: string): { result: JsonValue; result_truncated?: true } {
  if (content.length <= EVENT_RESULT_CHARS) return { result: resultForEvents(content) };
  return { result: content.slice(0, EVENT_RESULT_CHARS), result_truncated: true };
}
