import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import {
  budgetReport,
  effectiveLimits,
  exceededLimits,
  recordCall,
  type BudgetLimit,
  type BudgetReport,
  type RunSpending,
  type StepEstimate,
  type LlmPhaseResult,
} from '../../runtime';
import { waitForDecision } from '../batch/decision-wait';
import { emit, type Run } from '../run/run-state';
import { keepVisible } from '../run/visibility';

/** Why a step was not taken: the limits it would have passed. */
export interface BudgetStop {
  outcome: 'budget_exhausted';
  exceeded: BudgetLimit[];
}

/** A tool batch costs no tokens: only limits already reached, or run out (wall time), stop it. */
export const BATCH_ESTIMATE: StepEstimate = { input_tokens: 0, output_tokens: 0, llm_calls: 0 };

/**
 * Before a model call or a tool batch: null when the run can afford it. Otherwise, with
 * `on_exhausted: "stop"`, the limits it would pass; with `"ask"` the run waits (`awaiting_budget`) for
 * an `extend_budget` update, then checks again, or for an abort (which then returns the limits too).
 */
export async function affordable(run: Run, step: StepEstimate): Promise<BudgetStop | null> {
  const settings = run.settings.budget;
  for (;;) {
    const exceeded = exceededLimits(settings, run.durable.ledger, Date.now(), step);
    if (exceeded.length === 0) return null;
    if (settings.on_exhausted === 'stop' || run.live.abort.requested) return { outcome: 'budget_exhausted', exceeded };
    const extensions = run.live.budgetExtensions;
    run.live.awaitingBudget = exceeded;
    emit(run, { event_type: 'budget_exhausted', exceeded, waiting: true, ...budgetFigures(run) });
    keepVisible(run);
    const waiting = `waiting for a budget extension (${exceeded.join(', ')} reached)`;
    // What the run does now (`show`'s "now:" line, the UI's current details) is this wait, not its last step.
    setCurrentDetails(waiting);
    await waitForDecision(
      `${waiting}; npx patchloop budget extend ${workflowInfo().workflowId}`,
      () => run.live.abort.requested || run.live.budgetExtensions > extensions,
    );
    run.live.awaitingBudget = null;
    keepVisible(run);
    if (run.live.abort.requested) return { outcome: 'budget_exhausted', exceeded };
  }
}

/**
 * Charges one model call to the run's ledger: every call that reached the provider (an aborted stream
 * too), at the usage it reported, or at the estimate of its prompt when it reported none.
 */
export function charge(run: Run, result: LlmPhaseResult, estimatedPromptTokens: number): void {
  const sent = result.outcome === 'completed' || result.usage !== null || result.duration_ms > 0;
  if (!sent) return;
  const usage = result.usage ?? {
    prompt_tokens: estimatedPromptTokens,
    completion_tokens: 0,
    total_tokens: estimatedPromptTokens,
  };
  run.durable.ledger = recordCall(run.durable.ledger, usage, run.settings.budget.prices);
}

/** The budget's limits and what was spent, as events report them. */
export function budgetFigures(run: Run): Pick<BudgetReport, 'limit' | 'spent'> {
  const { limit, spent } = budgetReport(run.settings.budget, run.durable.ledger, Date.now(), []);
  return { limit, spent };
}

/** The result's `budget` field. */
export function resultBudget(run: Run, exceeded: BudgetLimit[]): BudgetReport {
  return budgetReport(run.settings.budget, run.durable.ledger, Date.now(), exceeded);
}

/** What the run spent, as its caller charges it: a sub-agent's result reports it, its failure carries it. */
export function runSpending(run: Run): RunSpending {
  return { usage: run.durable.usage, llm_calls: hasBudget(run) ? (budgetFigures(run).spent['max_llm_calls'] ?? 0) : 0 };
}

/** Whether the run has any limit set (its result then reports the budget). */
export function hasBudget(run: Run): boolean {
  return Object.values(effectiveLimits(run.settings.budget, run.durable.ledger)).some((value) => value !== null);
}
