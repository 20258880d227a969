import type { ToolCallRequest } from './phases';

/**
 * What the loop does after an LLM phase (spec 7.3 step 5, in its order). A pure function of the
 * facts, so the decision is tested on its own and the executor only carries it out.
 */
export type NextStep =
  /** The phase was aborted: commit its partial text and finish as aborted (8.3). */
  | { type: 'aborted' }
  /** No tool calls and nothing waiting: commit the answer and finish. */
  | { type: 'final' }
  /** An answer, but user messages arrived meanwhile: commit it and go on with them. */
  | { type: 'run_again' }
  /** The batch would pass the tool budget: drop it and make one last call without tools (7.5). */
  | { type: 'limit_reached' }
  /** Run the batch, then go on. */
  | { type: 'run_tools'; calls: ToolCallRequest[] };

export interface TurnFacts {
  outcome: 'completed' | 'aborted';
  calls: ToolCallRequest[];
  /** Tool calls made so far in this turn. */
  toolCalls: number;
  /** The turn's tool budget; null is unlimited. */
  maxToolCalls: number | null;
  /** User messages wait that this turn folds in (runs do, sessions keep them for turns of their own). */
  messagesWaiting: boolean;
  abortRequested: boolean;
  /** This phase was the budget's last call, made without tools. */
  lastCall: boolean;
}

export function decideNext(facts: TurnFacts): NextStep {
  if (facts.outcome === 'aborted') return { type: 'aborted' };
  const goOn = facts.messagesWaiting && !facts.abortRequested;
  // The budget's last call offered no tools: whatever it returns ends the turn unless messages wait.
  if (facts.lastCall || facts.calls.length === 0) return goOn ? { type: 'run_again' } : { type: 'final' };
  if (facts.maxToolCalls !== null && facts.toolCalls + facts.calls.length > facts.maxToolCalls) {
    return { type: 'limit_reached' };
  }
  return { type: 'run_tools', calls: facts.calls };
}
