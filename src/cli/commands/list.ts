import { PATCHLOOP_SEARCH_ATTRIBUTES as keys } from '../../common';
import type { PatchloopClient } from '../../client/patchloop-client';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { LIST_STATUSES, LIST_SYNTAX } from '../syntax';

interface Listed {
  workflow_id: string;
  type: string;
  agent: string | null;
  status: string;
  iterations: number | null;
  tool_calls: number | null;
  total_tokens: number | null;
  started: string;
  /** Worker Versioning: `deployment/build` of the run's version. */
  build?: string;
}

export async function listCommand(
  client: PatchloopClient,
  args: string[],
  print: (line: string) => void,
): Promise<unknown> {
  const { values } = parseCommand(args, LIST_SYNTAX);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`--limit must be a whole number >= 1\nusage: ${LIST_SYNTAX.usage}`);
  if (values.status !== undefined && !LIST_STATUSES.includes(values.status))
    throw new UsageError(`--status must be one of ${LIST_STATUSES.join(', ')}\nusage: ${LIST_SYNTAX.usage}`);
  if (values.agent !== undefined && !/^[\w.-]+$/.test(values.agent))
    throw new UsageError(`--agent takes an agent name (letters, digits, _ . -)\nusage: ${LIST_SYNTAX.usage}`);
  const query = [
    `WorkflowType IN ('agentRun', 'chatSession')`,
    ...(values.agent ? [`${keys.agent.name} = '${values.agent}'`] : []),
    ...(values.status === 'failed'
      ? // Runs that failed before failed runs kept their state in the attributes are failed all the same.
        [`(${keys.status.name} = 'failed' OR ExecutionStatus = 'Failed')`]
      : values.status
        ? [`${keys.status.name} = '${values.status}'`]
        : []),
    // A run that continued as new, was terminated or timed out keeps its last reported state: only
    // running executions are running.
    ...(['running', 'awaiting_approval', 'awaiting_budget'].includes(values.status ?? '')
      ? [`ExecutionStatus = 'Running'`]
      : []),
  ].join(' AND ');
  const listed: Listed[] = [];
  for await (const execution of client.temporal.workflow.list({ query })) {
    const attributes = execution.typedSearchAttributes;
    listed.push({
      workflow_id: execution.workflowId,
      type: execution.type,
      agent: attributes.get(keys.agent) ?? null,
      // Before the worker resolved the agent (or without search attributes), Temporal's own status.
      status:
        execution.status.name === 'RUNNING'
          ? (attributes.get(keys.status) ?? 'running')
          : execution.status.name === 'COMPLETED' || execution.status.name === 'FAILED'
            ? (attributes.get(keys.status) ?? execution.status.name.toLowerCase())
            : execution.status.name.toLowerCase().replace(/_/g, ' '),
      iterations: attributes.get(keys.iterations) ?? null,
      tool_calls: attributes.get(keys.toolCalls) ?? null,
      total_tokens: attributes.get(keys.totalTokens) ?? null,
      started: execution.startTime.toISOString(),
      ...(buildOf(execution.searchAttributes) ? { build: buildOf(execution.searchAttributes)! } : {}),
    });
    if (listed.length >= limit) break;
  }
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
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    print(
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    );
  return undefined;
}

/**
 * Worker Versioning: the deployment version a listed run is on (`deployment/build`), from the search
 * attribute the server keeps (`TemporalWorkerDeploymentVersion`, `deployment:build`); none when unversioned.
 */
function buildOf(attributes: Record<string, unknown>): string | undefined {
  const values = attributes['TemporalWorkerDeploymentVersion'];
  const version = Array.isArray(values) && typeof values[0] === 'string' ? values[0] : undefined;
  const at = version?.lastIndexOf(':') ?? -1;
  return version && at > 0 ? `${version.slice(0, at)}/${version.slice(at + 1)}` : undefined;
}
