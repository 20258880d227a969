import type { PatchloopClient } from '../../client/patchloop-client';
import { countOption, parseCommand } from '../arguments';
import { printTable } from '../table';
import { UsageError } from '../errors';
import { PRINCIPAL_NAME } from '../../runtime';
import { LIST_STATUSES, LIST_SYNTAX } from '../syntax';

export async function listCommand(
  client: PatchloopClient,
  args: string[],
  print: (line: string) => void,
): Promise<unknown> {
  const { values } = parseCommand(args, LIST_SYNTAX);
  const limit = countOption(values.limit, '--limit', 20, LIST_SYNTAX.usage);
  if (values.status !== undefined && !LIST_STATUSES.includes(values.status))
    throw new UsageError(`--status must be one of ${LIST_STATUSES.join(', ')}\nusage: ${LIST_SYNTAX.usage}`);
  if (values.agent !== undefined && !/^[\w.-]+$/.test(values.agent))
    throw new UsageError(`--agent takes an agent name (letters, digits, _ . -)\nusage: ${LIST_SYNTAX.usage}`);
  if (values.schedule !== undefined && !/^[\w.-]+$/.test(values.schedule))
    throw new UsageError(`--schedule takes a schedule name (letters, digits, _ . -)\nusage: ${LIST_SYNTAX.usage}`);
  if (values.principal !== undefined && !PRINCIPAL_NAME.test(values.principal))
    throw new UsageError(`--principal takes a principal's name (docs/gateway.md)\nusage: ${LIST_SYNTAX.usage}`);
  const listed = await client.listRuns({
    ...(values.principal ? { principal: values.principal } : {}),
    limit,
    ...(values.agent ? { agent: values.agent } : {}),
    ...(values.schedule ? { schedule: values.schedule } : {}),
    ...(values.status ? { status: values.status } : {}),
  });
  if (values.json) return listed;
  if (listed.length === 0) {
    print('no runs found');
    return undefined;
  }
  // Versioned workers: the build each run is on.
  const builds = listed.some((run) => run.build !== undefined);
  const rows = [
    ['WORKFLOW ID', 'TYPE', 'AGENT', 'STATUS', 'ITER', 'TOOLS', 'TOKENS', 'STARTED', ...(builds ? ['BUILD'] : [])],
    ...listed.map((run) => [
      run.workflow_id,
      run.type,
      run.agent ?? '-',
      run.status,
      String(run.iterations ?? '-'),
      String(run.tool_calls ?? '-'),
      String(run.total_tokens ?? '-'),
      run.started,
      ...(builds ? [run.build ?? '-'] : []),
    ]),
  ];
  printTable(rows, print);
  return undefined;
}
