import type { AgentSpec, CarriedRun, LoggedRunEvent } from '../runtime';
import type { TurnProgress } from './agent-loop';
import { recentEvents, restoreEvents } from './continue-as-new';
import { commit, runningChildren, type Run } from './run-state';

/**
 * The core every run and session carries across continue-as-new (`CarriedRun`), taken from the run.
 * The one place that writes it: a field added to `Run` that must survive the boundary goes here and in
 * `restoreRun`, and both workflows carry it.
 */
export function carryRun(
  run: Run,
  agent: AgentSpec,
  progress: TurnProgress,
  continued: number,
  withEvents = true,
): CarriedRun {
  const recent = withEvents ? recentEvents(run) : [];
  return {
    agent,
    transcript: run.transcript,
    pending: run.pending,
    inbox: run.inbox,
    next_inbox_id: run.nextInboxId,
    selfref_queue: run.selfrefQueue,
    iteration: run.iteration,
    llm_calls: run.llmCalls,
    tool_calls: run.toolCalls,
    turn_tool_calls: progress.toolCalls,
    usage: run.usage,
    fork_count: run.forkCount,
    event_seq: run.eventSeq,
    // The events of the window that do not travel count as dropped too.
    events_dropped: run.eventsDropped + run.events.length - recent.length,
    recent_events: recent,
    rejected_inputs: run.rejectedInputs,
    recent_updates: run.recentUpdates,
    context: run.context,
    ledger: run.ledger,
    continued,
    // Of the children still running only (a batch carried while they run has every one started).
    ...(runningChildren(run).size > 0 ? { child_approvals: Object.fromEntries(runningChildren(run)) } : {}),
    ...(progress.awaiting ? { awaiting_batch: progress.awaiting } : {}),
  };
}

/**
 * Puts a carried core back into a new run, and says where its turn resumes. Call it before any handler is registered: signals and
 * updates buffered for the new run land in the carried inbox, and a decision buffered for a waiting
 * batch is validated against its carried approval records.
 */
export function restoreRun(run: Run, state: CarriedRun): TurnProgress {
  // The active agent (a handoff may have made it another than the input's).
  run.agent = state.agent.name;
  run.selfref = state.agent.selfref;
  run.transcript = state.transcript;
  run.pending = state.pending;
  run.inbox = state.inbox;
  run.nextInboxId = state.next_inbox_id;
  run.selfrefQueue = state.selfref_queue;
  run.iteration = state.iteration;
  run.llmCalls = state.llm_calls;
  run.toolCalls = state.tool_calls;
  run.usage = state.usage;
  run.forkCount = state.fork_count;
  run.rejectedInputs = state.rejected_inputs;
  run.recentUpdates = state.recent_updates;
  run.context = state.context;
  run.ledger = state.ledger;
  run.approvals = state.awaiting_batch?.approvals ?? [];
  run.childApprovals = new Map(Object.entries(state.child_approvals ?? {}));
  restoreEvents(run, state.recent_events as LoggedRunEvent[], state.event_seq, state.events_dropped);
  // The snapshot is derived from the transcript: recompute it rather than carry it.
  commit(run, []);
  return { toolCalls: state.turn_tool_calls, ...(state.awaiting_batch ? { awaiting: state.awaiting_batch } : {}) };
}
