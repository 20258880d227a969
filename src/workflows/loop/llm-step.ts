import { patched, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { failure, FailureType } from '../../common';
import { compileRequestMessages, type JsonObject } from '../../context';
import {
  addUsage,
  reservedOutputTokens,
  withAbortReason,
  type LlmPhaseInput,
  type LlmPhaseResult,
} from '../../runtime';
import { affordable, charge, type BudgetStop } from './budget-gate';
import { compactContext, contextOverflowIn, proactiveCompaction, reactiveCompaction } from './context-step';
import { callLlmPhase } from './llm-call';
import { checkedAnswer } from './guardrail-step';
import { checksAt } from './guardrail-checks';
import type { LlmMode, LoopContext } from './loop-context';
import * as events from '../run/run-events';
import { emit, transcriptChecked } from '../run/run-state';

/** The provider request the workflow compiles from the current context (spec 7.3 step 2). */
export function buildRequest(loop: LoopContext, mode: LlmMode) {
  const messages = compileRequestMessages(
    loop.contract,
    loop.run.durable.transcript,
    loop.run.derived.snapshot,
    transcriptChecked(loop.run),
  );
  const options: JsonObject = { ...loop.agent.llm_options };
  if (!mode.withTools) delete options['tool_choice'];
  return {
    ...options,
    model: loop.agent.model,
    messages,
    ...(mode.withTools ? { tools: loop.tools } : {}),
    stream: mode.stream,
    ...(mode.stream ? { stream_options: { include_usage: true } } : {}),
  };
}

/**
 * One LLM phase (spec 7.4). A request that would pass `compact_at` of the model's window is compacted
 * first (proactive); a request the provider still refuses as too long is compacted and sent once more
 * (reactive), and a second refusal ends the run with `ContextTooLong`. After an abort nothing is sent,
 * and a phase that hands back nothing still ends with its abort patch. A call the run's budget cannot
 * afford is never started: the step answers `budget_exhausted` (after a wait for `extend_budget` in
 * `ask` mode).
 */
export async function llmStep(
  loop: LoopContext,
  mode: LlmMode,
  eventIteration: number,
): Promise<LlmPhaseResult | BudgetStop> {
  const run = loop.run;
  let request = buildRequest(loop, mode);
  // Written once per request, from where the previous one's messages ended: its length measures it.
  let written = run.live.requestWriter.write(request);
  // The completion the options reserve (max_tokens) must fit the window beside the request.
  const reserved = reservedOutputTokens(loop.agent.llm_options);
  const due = run.live.abort.requested ? null : proactiveCompaction(run, written.text.length, reserved);
  if (due) {
    const stopped = await compactContext(loop, due, eventIteration);
    if (stopped) return stopped;
    request = buildRequest(loop, mode);
    written = run.live.requestWriter.write(request);
    proactiveCompaction(run, written.text.length, reserved);
  }
  for (let compacted = false; ; compacted = true) {
    const stop = await affordable(run, {
      input_tokens: run.durable.context.tokens,
      output_tokens: reserved,
      llm_calls: 1,
    });
    if (stop && !run.live.abort.requested) return stop;
    run.durable.llm_calls += 1;
    const llmCall = run.durable.llm_calls;
    emit(run, events.llmCallStart(llmCall, mode, request.messages.length), eventIteration);
    setCurrentDetails(`iteration ${eventIteration}: model call ${llmCall}`);
    let raw: LlmPhaseResult;
    try {
      raw = await callLlmPhase(
        loop,
        request,
        written,
        {
          iteration: eventIteration,
          llm_call: llmCall,
          ...(loop.options.outputCheck ? { output_check: loop.options.outputCheck } : {}),
          ...answerHeld(loop),
          ...fastToolsOf(loop, mode, eventIteration),
        },
        `llm call ${llmCall}`,
      );
    } catch (error) {
      const overflow = contextOverflowIn(error);
      // Runs recorded before reactive compaction failed here, and replay as they ran.
      if (!overflow || !patched('reactive-compaction')) throw error;
      if (compacted)
        throw failure(
          FailureType.ContextTooLong,
          `the provider still refused the request as longer than the model's context after a compaction brought it to about ${run.durable.context.tokens} tokens: ${causeMessage(error)}`,
        );
      // The refused call ends in the log too (its start is there): then the compaction, then the call again.
      emit(run, refusedCallEnd(llmCall), eventIteration);
      const stopped = await compactContext(
        loop,
        reactiveCompaction(run, overflow, written.text.length),
        eventIteration,
      );
      if (stopped) return stopped;
      request = buildRequest(loop, mode);
      written = run.live.requestWriter.write(request);
      continue;
    }
    const result = { ...raw, mutations: withAbortReason(raw.mutations, run.live.abort.reason) };
    // Only the provider's own count measures the context: an estimate from characters would overwrite
    // the rate it showed (or the size a refusal stated) with the floor rate.
    if (result.usage && result.usage.prompt_tokens > 0 && !result.usage.estimated)
      run.durable.context.measure = { request_chars: written.text.length, prompt_tokens: result.usage.prompt_tokens };
    run.durable.usage = addUsage(run.durable.usage, result.usage);
    charge(run, result, run.durable.context.tokens);
    // An answer is checked before its end event (awaited only with output guardrails: other runs as before).
    const checked = checksAt(loop.agent, 'output') ? await checkedAnswer(loop, result, eventIteration) : { result };
    emit(run, events.llmCallEnd(llmCall, checked.result), eventIteration);
    if (checked.blocked) throw checked.blocked;
    return checked.result;
  }
}

/** An answer's tokens wait for its output checks (docs/guardrails.md#streaming). */
function answerHeld(loop: LoopContext): Pick<LlmPhaseInput, 'hold_answer'> {
  return checksAt(loop.agent, 'output') ? { hold_answer: true } : {};
}

/**
 * The reply's fast tools the phase may run itself (the batch would run as a local activity otherwise):
 * with tools offered and the turn's budget known, when the agent has such tools.
 */
function fastToolsOf(loop: LoopContext, mode: LlmMode, eventIteration: number): Pick<LlmPhaseInput, 'fast_tools'> {
  if (!mode.withTools || mode.toolCallsLeft === undefined || loop.options.recordedTools) return {};
  const names = loop.fastTools;
  if (names.length === 0) return {};
  return {
    fast_tools: {
      names,
      max_calls: mode.toolCallsLeft,
      iteration: eventIteration + 1,
      run_chain_id: workflowInfo().firstExecutionRunId,
    },
  };
}

function causeMessage(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : String(error);
}

function refusedCallEnd(llmCall: number) {
  return {
    event_type: 'llm_call_end' as const,
    llm_call: llmCall,
    outcome: 'refused' as const,
    content: '',
    tool_calls: [],
    usage: null,
    duration_ms: 0,
    execution_time: 0,
  };
}
