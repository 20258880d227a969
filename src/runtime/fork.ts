import { applyMutations } from '../context';
import type { AgentSpec } from './agent';
import { emptyUsageLedger } from './budget';
import type { CarriedRun } from './carried-state';
import { handoffMutation } from './handoffs';
import type { ForkSource } from './fork-source';

/**
 * Forks (`patchloop fork`, docs/fork-and-evals.md): a new run whose context is exactly another run's as
 * it stood before one of its model requests. Pure: the capture activity replays the original's history
 * to that point (`activities/fork-capture.ts`), the workflow starts from what it captured with
 * `forkedState`, and nothing the original did (a tool call, a model call) runs again.
 */

/**
 * The memo key that asks a replay of a run to capture its state at an iteration: the capture activity
 * sets it on the history it replays, never on a run (a run that is not replaying ignores it).
 */
export const FORK_CAPTURE_MEMO = 'patchloop_fork_capture_at';

/** Whether a fork changes what the original would have sent at that iteration. */
export function forkOverrides(source: ForkSource): string[] {
  return (['agent', 'model', 'instructions', 'message'] as const).filter((key) => source[key] !== undefined);
}

/**
 * The state a fork starts from: the original's context as captured (transcript, pending patches, queued
 * messages and events, the SelfRef queue, the context ledger and the iteration count, so that its first
 * request is the original's byte for byte), with what it spent and recorded set back to nothing (its
 * usage, budget ledger, counters, events and updates are its own), then the overrides: another agent's
 * spec or model, other instructions (the system prompt patched, as a handoff patches it) and a message.
 */
export function forkedState<State extends CarriedRun>(captured: State, source: ForkSource, agent?: AgentSpec): State {
  let spec = agent ?? captured.agent;
  if (source.model !== undefined) spec = { ...spec, model: source.model };
  if (source.instructions !== undefined) spec = { ...spec, instructions: source.instructions };
  const pending = [...captured.pending];
  // The system prompt follows the agent (or the instructions) as a handoff's does: over the transcript
  // as the pending patches leave it, so that they keep what they add.
  if (agent !== undefined || source.instructions !== undefined)
    pending.push(handoffMutation(applyMutations(captured.transcript, pending), spec.instructions));
  const inbox = [...captured.inbox];
  let nextInboxId = captured.next_inbox_id;
  if (source.message !== undefined) inbox.push({ id: nextInboxId++, content: source.message });
  // A fork waits for no sub-agent and resumes no batch: it starts at a model request.
  const kept: State = { ...captured };
  delete kept.child_approvals;
  delete kept.awaiting_batch;
  return {
    ...kept,
    agent: spec,
    pending,
    inbox,
    next_inbox_id: nextInboxId,
    llm_calls: 0,
    tool_calls: 0,
    usage: null,
    ledger: emptyUsageLedger(),
    event_seq: 0,
    events_dropped: 0,
    recent_events: [],
    rejected_inputs: 0,
    recent_updates: [],
    continued: 0,
  };
}

/**
 * What a session's fork starts from: the session's state as its turn `at` began (the turns before it
 * done, the turn's message not yet in the context) and that turn's message.
 */
export interface SessionForkPoint<State extends CarriedRun> {
  state: State;
  message: string;
}

/**
 * A session's fork: the captured state as `forkedState` makes it (the turns counted on, so the fork's first
 * reply is turn `at`), with one message queued: the original turn's, or the override. Messages the
 * original had queued for later turns are not the fork's: it answers the ones it is sent.
 */
export function forkedSession<State extends CarriedRun>(
  captured: SessionForkPoint<State>,
  source: ForkSource,
  agent?: AgentSpec,
): State {
  const { message, ...changes } = source;
  const state = forkedState(captured.state, changes, agent);
  return {
    ...state,
    inbox: [{ id: state.next_inbox_id, content: message ?? captured.message }],
    next_inbox_id: state.next_inbox_id + 1,
  };
}

/** Where a fork starts, in words: "iteration 3" of a run, "turn 2" of a session. */
export function forkPoint(at: number, unit: ForkUnit = 'iteration'): string {
  return `${unit} ${at}`;
}

/** What a fork's `at` counts: a run's iterations, a session's turns. */
export type ForkUnit = 'iteration' | 'turn';

/** What a fork of a workflow of this type counts: a session (`chatSession`) forks at turns, a run at iterations. */
export function forkUnitOf(workflowType: string | undefined): ForkUnit {
  return workflowType === 'chatSession' ? 'turn' : 'iteration';
}

/** The settings of the original's input a fork keeps: the caller's overrides of the agent's for that run. */
const INHERITED = ['context', 'budget', 'max_tool_calls'] as const;
type Inherited = (typeof INHERITED)[number];

/**
 * The original's own overrides (its input's `context`, `budget`, `max_tool_calls`), as the capture read
 * them from the start of the run it replayed: a fork of a run started with a budget has that budget too.
 */
export function inheritedSettings(originalInput: unknown): Record<string, unknown> {
  if (originalInput === null || typeof originalInput !== 'object') return {};
  const input = originalInput as Record<string, unknown>;
  return Object.fromEntries(INHERITED.flatMap((key) => (input[key] !== undefined ? [[key, input[key]]] : [])));
}

/** A fork's input with the original's overrides where the fork's own input sets none. */
export function withInherited<Input extends { [Key in Inherited]?: unknown }>(
  input: Input,
  inherited: Partial<Pick<Input, Inherited>>,
): Input {
  const filled = INHERITED.flatMap((key) =>
    input[key] === undefined && inherited[key] !== undefined ? [[key, inherited[key]]] : [],
  );
  return { ...input, ...Object.fromEntries(filled) };
}
