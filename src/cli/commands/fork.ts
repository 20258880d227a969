import type { ForkOptions, PatchloopClient } from '../../client/patchloop-client';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { FORK_SYNTAX, REWIND_SYNTAX } from '../syntax';

/** `patchloop fork <id> --at N [overrides] [--id NEW]`: starts the fork and prints its id (docs/fork-and-evals.md). */
export async function forkCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { id, options } = forkArguments(args, FORK_SYNTAX);
  const fork = await client.fork(id, options);
  return { workflow_id: fork.workflowId, forked_from: { workflow_id: id, at: options.at } };
}

/** `patchloop rewind <id> --at N ...`: the fork, and the original aborted with a reason naming it. */
export async function rewindCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { id, options } = forkArguments(args, REWIND_SYNTAX);
  const { fork, aborted } = await client.rewind(id, options);
  return { workflow_id: fork.workflowId, forked_from: { workflow_id: id, at: options.at }, original_aborted: aborted };
}

function forkArguments(
  args: string[],
  syntax: typeof FORK_SYNTAX | typeof REWIND_SYNTAX,
): { id: string; options: ForkOptions } {
  const { values, positionals } = parseCommand(args, syntax);
  const at = values.at === undefined ? Number.NaN : Number(values.at);
  if (!Number.isInteger(at) || at < 0)
    throw new UsageError(
      `--at must be an iteration, or a session's turn (a whole number, 0 or more), not '${values.at ?? ''}'\nusage: ${syntax.usage}`,
    );
  const { agent, model, instructions, message, id } = values;
  return {
    id: positionals['id']!,
    options: {
      at,
      ...(agent !== undefined ? { agent } : {}),
      ...(model !== undefined ? { model } : {}),
      ...(instructions !== undefined ? { instructions } : {}),
      ...(message !== undefined ? { message } : {}),
      ...(id !== undefined ? { workflowId: id } : {}),
    },
  };
}
