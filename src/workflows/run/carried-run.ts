import { DurableRun, partOf, type AgentSpec, type CarriedRun } from '../../runtime';
import type { TurnProgress } from '../loop/agent-loop';
import { recentEvents } from './continue-as-new';
import { eventLog, refreshDerived, runningChildren, type Run } from './run-state';

/**
 * What a run or session carries across continue-as-new (`CarriedRun`): its durable part as it is, and
 * where its turn stands. Only what a boundary changes is computed here: the event log travels as its
 * newest events, and only the running sub-agents' waits.
 */
export function carryRun(
  run: Run,
  agent: AgentSpec,
  progress: TurnProgress,
  continued: number,
  withEvents = true,
): CarriedRun {
  const recent = withEvents ? recentEvents(run) : [];
  const running = runningChildren(run);
  return {
    ...run.durable,
    // The events of the window that do not travel count as dropped too.
    recent_events: recent,
    events_dropped: run.durable.events_dropped + eventLog(run).length - recent.length,
    child_approvals: running.size > 0 ? Object.fromEntries(running) : undefined,
    agent,
    continued,
    turn_tool_calls: progress.toolCalls,
    awaiting_batch: progress.awaiting,
  };
}

/**
 * Puts a carried state back into a new run, and says where its turn resumes. Call it before any handler is registered: signals and
 * updates buffered for the new run land in the carried inbox, and a decision buffered for a waiting
 * batch is validated against its carried approval records.
 */
export function restoreRun(run: Run, state: CarriedRun): TurnProgress {
  run.durable = partOf(DurableRun, state);
  // The active agent (a handoff may have made it another than the input's).
  run.settings.agent = state.agent.name;
  run.settings.selfref = state.agent.selfref;
  run.live.approvals = state.awaiting_batch?.approvals ?? [];
  refreshDerived(run);
  return { toolCalls: state.turn_tool_calls, ...(state.awaiting_batch ? { awaiting: state.awaiting_batch } : {}) };
}
