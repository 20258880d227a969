import {
  failedCall,
  isSelfRefTool,
  NO_RECORDING,
  recordedAnswers,
  succeededCall,
  type ToolCallRequest,
  type ToolRecordings,
  type WorkflowCallResult,
} from '../../runtime';
import type { LoopContext } from '../loop/loop-context';

/** A run's tool recordings, and how many times it took each call's (by the call's key). */
export interface RecordedTools {
  recordings: ToolRecordings;
  used: Map<string, number>;
}

/**
 * The calls of a batch a run answers from its recordings (`tool_recordings` of its input): each with
 * the recorded result, or, with no recording and no `fallthrough`, an error result; none of them runs.
 * Handoffs and SelfRef calls are not answered: what they do is the workflow's, not a result.
 */
export function recordedResults(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  decided: readonly WorkflowCallResult[],
): WorkflowCallResult[] {
  const replay = loop.options.recordedTools;
  if (!replay) return [];
  const answerable = calls.filter(
    (call) =>
      !decided.some((result) => result.call === call) &&
      !isSelfRefTool(call.name) &&
      loop.agent.tool_descriptors.find((tool) => tool.name === call.name)?.agent_call?.kind !== 'handoff',
  );
  const answers = recordedAnswers(replay.recordings, answerable, replay.used);
  return answerable.flatMap((call, index) => {
    const answer = answers[index];
    if (answer !== undefined) return [succeededCall(call, answer, 0)];
    if (replay.recordings.fallthrough) return [];
    return [
      failedCall(
        call,
        `${NO_RECORDING} in run ${replay.recordings.from_run} (this run answers tools from its recordings)`,
        0,
      ),
    ];
  });
}
