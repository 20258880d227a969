import { setCurrentDetails } from '@temporalio/workflow';
import { compileRequestMessages, type JsonObject } from '../context';
import { addUsage, truncatedReplyMutation, withAbortReason, type LlmPhaseResult } from '../runtime';
import type { LlmMode, LoopContext } from './loop-context';
import { inPhaseScope } from './phase-scope';
import * as events from './run-events';
import { emit } from './run-state';

/** The provider request the workflow compiles from the current context (spec 7.3 step 2). */
export function buildRequest(loop: LoopContext, mode: LlmMode) {
  const messages = compileRequestMessages(loop.contract, loop.run.transcript, loop.run.snapshot);
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
 * One LLM phase (spec 7.4): the request is compiled here and handed to the activity by digest (it pulls
 * the text by query, so history holds only new content). After an abort nothing is sent, and a phase
 * that hands back nothing still ends with its abort patch.
 */
export async function llmStep(loop: LoopContext, mode: LlmMode, eventIteration: number): Promise<LlmPhaseResult> {
  const run = loop.run;
  run.llmCalls += 1;
  const llmCall = run.llmCalls;
  const request = buildRequest(loop, mode);
  run.request = { ...run.requestWriter.write(request), llmCall };
  emit(run, events.llmCallStart(llmCall, mode, request.messages.length), eventIteration);
  setCurrentDetails(`iteration ${eventIteration}: model call ${llmCall}`);
  const raw = run.abort.requested ? abortedPhase() : await callActivity(loop, llmCall, eventIteration, request);
  run.request = null;
  const result = { ...raw, mutations: withAbortReason(raw.mutations, run.abort.reason) };
  run.usage = addUsage(run.usage, result.usage);
  emit(run, events.llmCallEnd(llmCall, result), eventIteration);
  return result;
}

async function callActivity(
  loop: LoopContext,
  llmCall: number,
  eventIteration: number,
  request: ReturnType<typeof buildRequest>,
): Promise<LlmPhaseResult> {
  const run = loop.run;
  try {
    return await inPhaseScope(run, loop.agent.limits.abort_wait_seconds, () =>
      loop.activities.llmPhase(
        {
          agent: loop.agent.name,
          iteration: eventIteration,
          llm_call: llmCall,
          digest: run.request!.digest,
          ...(loop.options.transport === 'inline' ? { request } : {}),
          ...(loop.options.outputCheck ? { output_check: loop.options.outputCheck } : {}),
        },
        `llm call ${llmCall}`,
      ),
    );
  } catch (error) {
    // After an abort, a phase that hands back nothing (cancelled early, dead worker) still ends cleanly.
    if (!run.abort.requested) throw error;
    return abortedPhase();
  }
}

function abortedPhase(): LlmPhaseResult {
  return {
    outcome: 'aborted',
    mutations: [truncatedReplyMutation('')],
    usage: null,
    finish_reason: null,
    duration_ms: 0,
  };
}
