import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { FailureType, PATCHLOOP_SEARCH_ATTRIBUTES } from '../../common';
import {
  AgentRunState,
  FORK_CAPTURE_MEMO,
  forkedSession,
  forkedState,
  forkOverrides,
  RUN_STATE_SCHEMA_VERSION,
  SESSION_SCHEMA_VERSION,
  SessionForkCapture,
  type AgentSpec,
  type ForkSource,
  type ForkUnit,
  type RunEventBody,
  type SessionState,
} from '../../runtime';
import { carryRun } from './carried-run';
import { asRunFailure } from './failures';
import { resolveAgent } from './open-run';
import type { Run } from './run-state';
import { keepVisible } from './visibility';
import { sinks } from '../sinks';

/** A replay of a long run's history may take minutes; a worker that dies meanwhile is retried after this. */
const CAPTURE_SECONDS = 600;

/**
 * The state a fork starts from: the `captureRunState` activity replays the original's history up to
 * the model request of `source.at` and returns what the run carried there; then another agent is
 * resolved (recorded, as a handoff's), and `forkedState` applies the overrides.
 */
export async function forkState(source: ForkSource): Promise<ForkStart<AgentRunState>> {
  const { captured, inherited } = await capture(source, 'agentRun');
  return { state: forkedState(AgentRunState.parse(captured), source, await otherAgent(source)), inherited };
}

/** A session's fork: its state as turn `source.at` began, with that turn's message (or the override) queued. */
export async function sessionForkState(source: ForkSource): Promise<ForkStart<SessionState>> {
  const { captured, inherited } = await capture(source, 'chatSession');
  return {
    state: forkedSession(SessionForkCapture.parse(captured), source, await otherAgent(source)),
    inherited,
  };
}

/** Where a fork starts: its state, and the original's own overrides of its agent's settings (`withInherited`). */
export interface ForkStart<State> {
  state: State;
  inherited: Record<string, unknown>;
}

async function capture(
  source: ForkSource,
  workflowType: 'agentRun' | 'chatSession',
): Promise<{ captured: unknown; inherited: Record<string, unknown> }> {
  const point =
    workflowType === 'chatSession'
      ? `as its turn ${source.at} began`
      : `before its model request at iteration ${source.at}`;
  const { captureRunState } = proxyActivities<Activities>({
    startToCloseTimeout: `${CAPTURE_SECONDS}s`,
    summary: `read ${source.workflow_id} ${point}`,
    retry: { maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.ForkUnavailable] },
  });
  const answer = (await captureRunState({
    workflow_id: source.workflow_id,
    at: source.at,
    workflow_type: workflowType,
  })) as { inherited?: Record<string, unknown> };
  // Captures recorded before forks inherited anything have no `inherited`.
  const { inherited, ...captured } = answer;
  return { captured, inherited: inherited ?? {} };
}

function otherAgent(source: ForkSource): Promise<AgentSpec | undefined> {
  return source.agent === undefined ? Promise.resolve(undefined) : resolveAgent(source.agent);
}

/**
 * A fork's state, read before any handler is registered (signals sent meanwhile wait for the handlers;
 * updates and queries are refused until it has it: seconds). A fork that cannot read it fails, and shows
 * as failed where the client started it as running (the namespace has the search attributes).
 */
export async function forkStart<State>(run: Run, read: () => Promise<State>): Promise<State> {
  return read().catch((error: unknown) => {
    if (workflowInfo().typedSearchAttributes.get(PATCHLOOP_SEARCH_ATTRIBUTES.status) !== undefined) {
      run.live.visibility.enabled = true;
      run.live.state = 'failed';
      keepVisible(run);
    }
    throw asRunFailure(error);
  });
}

/** The first event of a fork: where it comes from and what it changes. */
export function forkedEvent(source: ForkSource, unit: ForkUnit = 'iteration'): RunEventBody {
  return {
    event_type: 'custom_event',
    event_name: 'forked',
    data: {
      workflow_id: source.workflow_id,
      at: source.at,
      ...(unit === 'turn' ? { unit } : {}),
      overrides: forkOverrides(source),
    },
    tool_name: '',
    tool_call_id: '',
  };
}

/** The iteration (or turn) a capture replay was asked for: only while replaying a history with the memo. */
function capturePoint(): number | undefined {
  const info = workflowInfo();
  const at = info.memo?.[FORK_CAPTURE_MEMO];
  return typeof at === 'number' && info.unsafe.isReplaying ? at : undefined;
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
  const at = capturePoint();
  if (at === undefined) return undefined;
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

/**
 * A session's counterpart, at each turn's start (before its message enters the context): tells the replay
 * which turn it reached, and at the one asked for hands over the session's state and that turn's message.
 */
export function sessionForkCapture(
  run: Run,
  agent: () => AgentSpec,
  continued: () => number,
): ((turn: number, turns: number, message: string) => void) | undefined {
  const at = capturePoint();
  if (at === undefined) return undefined;
  return (turn, turns, message) => {
    sinks.patchloopFork.reached(turn);
    if (turn !== at) return;
    const state = carryRun(run, agent(), { toolCalls: 0 }, continued(), false);
    sinks.patchloopFork.captured(turn, { state: { schema_version: SESSION_SCHEMA_VERSION, ...state, turns }, message });
  };
}
