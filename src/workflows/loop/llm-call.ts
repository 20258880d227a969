import { truncatedReplyMutation, type LlmPhaseInput, type LlmPhaseResult, type RequestText } from '../../runtime';
import type { LoopContext } from './loop-context';
import { inPhaseScope } from './phase-scope';

/** What a model call needs of the loop: the run, the agent, its activities and how requests travel. */
export type CallContext = Pick<LoopContext, 'run' | 'agent' | 'activities'> & {
  options: Pick<LoopContext['options'], 'transport'>;
};

/**
 * One model call through the `llmPhase` activity: the request is written here and handed over by
 * digest (the activity pulls the text by query, so history holds only new content). After an abort,
 * a call that hands back nothing (cancelled early, dead worker) still ends as an aborted phase.
 */
export async function callLlmPhase(
  loop: CallContext,
  request: { messages: readonly unknown[] } & Record<string, unknown>,
  written: RequestText,
  input: Omit<LlmPhaseInput, 'agent' | 'digest' | 'request'>,
  summary: string,
): Promise<LlmPhaseResult> {
  const run = loop.run;
  const serverErrorSeconds = loop.agent.limits.llm_server_error_seconds;
  run.live.request = { ...written, llmCall: input.llm_call ?? 0 };
  // A local activity runs inside a workflow task, which answers no query until it ends: its request goes
  // in its input (a local activity's input is not recorded in history).
  const local = loop.agent.limits.llm_local_activity && !input.purpose;
  const call = local ? loop.activities.localLlmPhase : loop.activities.llmPhase;
  try {
    if (run.live.abort.requested) return abortedPhase();
    return await inPhaseScope(run, loop.agent.limits.abort_wait_seconds, () =>
      call(
        {
          agent: loop.agent.name,
          ...(loop.agent.provider ? { provider: loop.agent.provider } : {}),
          // Specs recorded before this limit have none: the activity then uses its default.
          ...(serverErrorSeconds !== undefined ? { server_error_seconds: serverErrorSeconds } : {}),
          ...input,
          digest: run.live.request!.digest,
          ...(local || loop.options.transport === 'inline' ? { request: request as LlmPhaseInput['request'] } : {}),
        },
        summary,
      ),
    );
  } catch (error) {
    if (!run.live.abort.requested) throw error;
    return abortedPhase();
  } finally {
    run.live.request = null;
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
