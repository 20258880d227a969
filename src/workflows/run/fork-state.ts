import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { FailureType } from '../../common';
import {
  AgentRunState,
  FORK_CAPTURE_MEMO,
  forkedState,
  RUN_STATE_SCHEMA_VERSION,
  type AgentSpec,
  type ForkSource,
} from '../../runtime';
import { carryRun } from './carried-run';
import { resolveAgent } from './open-run';
import type { Run } from './run-state';
import { sinks } from '../sinks';

/** A replay of a long run's history may take minutes; a worker that dies meanwhile is retried after this. */
const CAPTURE_SECONDS = 600;

/**
 * The state a fork starts from: the `captureRunState` activity replays the original's history up to
 * the model request of `source.at` and returns what the run carried there; then another agent is
 * resolved (recorded, as a handoff's), and `forkedState` applies the overrides.
 */
export async function forkState(source: ForkSource): Promise<AgentRunState> {
  const { captureRunState } = proxyActivities<Activities>({
    startToCloseTimeout: `${CAPTURE_SECONDS}s`,
    summary: `read ${source.workflow_id} before its model request at iteration ${source.at}`,
    retry: { maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.ForkUnavailable] },
  });
  const captured = AgentRunState.parse(await captureRunState({ workflow_id: source.workflow_id, at: source.at }));
  const agent = source.agent === undefined ? undefined : await resolveAgent(source.agent);
  return forkedState(captured, source, agent);
}

/**
 * In the capture activity's replay only (the history it replays carries the memo, and the run is
 * replaying): before each model request, tells the replay which iteration it reached, and at the one
 * asked for hands over the state a continue-as-new there would carry. Undefined for every real run.
 */
export function forkCapture(
  run: Run,
  agent: () => AgentSpec,
  continued: number,
): ((iteration: number, toolCalls: number) => void) | undefined {
  const info = workflowInfo();
  const at = info.memo?.[FORK_CAPTURE_MEMO];
  if (typeof at !== 'number' || !info.unsafe.isReplaying) return undefined;
  let captured = false;
  return (iteration, toolCalls) => {
    sinks.patchloopFork.reached(iteration);
    // The first request of that iteration (a message that arrived during it makes the run ask again).
    if (iteration !== at || captured) return;
    captured = true;
    const state = carryRun(run, agent(), { toolCalls }, continued, false);
    sinks.patchloopFork.captured(iteration, { schema_version: RUN_STATE_SCHEMA_VERSION, ...state });
  };
}
