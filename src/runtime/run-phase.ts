/**
 * Where a run stands for a caller of another protocol (an A2A task, an MCP task): going on by itself,
 * waiting for the caller's decision, or ended in one of three ways. One rule for every protocol.
 */
export type RunPhase = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/**
 * A run's phase from its status as `status` and the visibility store say it (patchloop's state, or
 * Temporal's for a run that ended without saying: terminated, timed out).
 */
export function runPhaseOf(status: string): RunPhase {
  switch (status) {
    case 'awaiting_approval':
      return 'input_required';
    case 'completed':
      return 'completed';
    case 'aborted':
    case 'canceled':
    case 'cancelled':
    case 'terminated':
      return 'cancelled';
    case 'failed':
    case 'budget_exhausted':
    case 'timed out':
      return 'failed';
    default:
      // running, waiting (a durable wait), awaiting_budget: the run goes on by itself or by an operator.
      return 'working';
  }
}

/** Whether a run in this phase has ended: it never leaves it. */
export function isEndPhase(phase: RunPhase): boolean {
  return phase === 'completed' || phase === 'failed' || phase === 'cancelled';
}
