import { z } from 'zod';
import { applyMutations } from '../context';
import { sharedSchema } from '../context/shared-schema';
import type { AgentSpec } from './agent';
import { emptyUsageLedger } from './budget';
import type { AgentRunState } from './carried-state';
import { handoffMutation } from './handoffs';

/**
 * Forks (`patchloop fork`, docs/fork-and-evals.md): a new run whose context is exactly another run's as
 * it stood before one of its model requests. Pure: the capture activity replays the original's history
 * to that point (`activities/fork-capture.ts`), the workflow starts from what it captured with
 * `forkedState`, and nothing the original did (a tool call, a model call) runs again.
 */

/** Where a fork comes from and what it changes (`fork_from` of `agentRun`'s input). */
export const ForkSource = sharedSchema('runtime/fork#ForkSource', () =>
  z.strictObject({
    /** The original run's workflow id (any run of its continue-as-new chain). */
    workflow_id: z.string().min(1),
    /** The iteration whose model request the fork makes again (as `show` and the events number them). */
    at: z.number().int().nonnegative(),
    /** Another agent answers from there on: its spec (tools, model, limits) and its instructions. */
    agent: z.string().min(1).optional(),
    /** Another model for the same agent. */
    model: z.string().min(1).optional(),
    /** Other instructions: the transcript's system prompt becomes them (a patch at the first compile). */
    instructions: z.string().min(1).optional(),
    /** A user message the fork's first request adds (queued as a message that arrived then would be). */
    message: z.string().min(1).optional(),
  }),
);
export type ForkSource = z.infer<typeof ForkSource>;

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
export function forkedState(captured: AgentRunState, source: ForkSource, agent?: AgentSpec): AgentRunState {
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
  const { child_approvals: _children, awaiting_batch: _batch, ...kept } = captured;
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
