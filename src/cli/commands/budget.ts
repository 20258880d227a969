import type { PatchloopClient } from '../../client/patchloop-client';
import type { BudgetExtension } from '../../runtime';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { explainUnavailable } from '../preflight';
import { appliedByWorker } from '../worker-watch';
import { BUDGET_SYNTAX } from '../syntax';

/** `patchloop budget extend <id> --tokens N ...`: the `extend_budget` update, as the temporal CLI sends it too. */
export async function budgetCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, BUDGET_SYNTAX);
  if (positionals['action'] !== 'extend')
    throw new UsageError(`unknown budget action '${positionals['action']}'\nusage: ${BUDGET_SYNTAX.usage}`);
  const amount = (name: 'tokens' | 'calls' | 'cost' | 'seconds') => {
    const text = values[name];
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0)
      throw new UsageError(`--${name} must be a number above 0, not '${text}'\nusage: ${BUDGET_SYNTAX.usage}`);
    return value;
  };
  const extension: BudgetExtension = {
    ...(amount('tokens') !== undefined ? { tokens: amount('tokens')! } : {}),
    ...(amount('calls') !== undefined ? { llm_calls: amount('calls')! } : {}),
    ...(amount('cost') !== undefined ? { cost_usd: amount('cost')! } : {}),
    ...(amount('seconds') !== undefined ? { wall_seconds: amount('seconds')! } : {}),
  };
  if (Object.keys(extension).length === 0)
    throw new UsageError(`name at least one of --tokens, --calls, --cost, --seconds\nusage: ${BUDGET_SYNTAX.usage}`);
  const id = positionals['id']!;
  const run = client.run(id);
  const limit = await appliedByWorker(run, client.taskQueue, () => run.extendBudget(extension)).catch(
    (error: unknown) => explainUnavailable(run, error, 'its budget takes no extension'),
  );
  return { workflow_id: id, limit };
}
