import { expect } from 'vitest';
import { failWith, reply, callTools, toolCall } from '../../src/fake-model/steps';
import { addTool } from '../../src/tools/examples';
import { scriptsByAgent } from '../../support/agent-scripts';
import { testWithWorld } from '../support/fixtures';
import { runCli } from '../support/cli';
import type { TestWorld } from '../support/temporal';
import { awaitingApproval, eventually } from '../support/wait';

/**
 * SQL visibility (PostgreSQL's advanced visibility on temporal-server): patchloop's search attributes
 * kept current by its runs, read back by `list`'s filters and by a query of Temporal's own, counted, and
 * changed when a run moves on (an approval decided).
 */
const scripts = scriptsByAgent({
  filer: { instructions: 'You file.', steps: [reply('filed')] },
  gate: {
    instructions: 'You add, with leave.',
    steps: [callTools([toolCall('g1', 'add', { a: 20, b: 22 })]), reply('42')],
  },
  broken: { instructions: 'You fail.', steps: [failWith(400, { message: 'bad request: no such model' })] },
});
const it = testWithWorld({
  agents: [
    { name: 'filer', instructions: 'You file.' },
    { name: 'gate', instructions: 'You add, with leave.', tools: ['add'], needs_approval: ['add'] },
    { name: 'broken', instructions: 'You fail.' },
  ],
  tools: [addTool],
  fake: { responder: scripts.responder },
});

function cli(world: TestWorld, args: string[]) {
  return runCli(args, { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue });
}

/** `list --json` with these filters: the workflow ids and statuses it prints. */
async function listed(world: TestWorld, filters: string[]): Promise<Array<{ workflow_id: string; status: string }>> {
  const out = await cli(world, ['list', ...filters, '--json', '--limit', '100']);
  expect(out.code, out.stderr).toBe(0);
  return (JSON.parse(out.stdout) as Array<{ workflow_id: string; status: string }>).map((row) => ({
    workflow_id: row.workflow_id,
    status: row.status,
  }));
}

it('list and Temporal queries read the search attributes from PostgreSQL, and follow a run as it moves on', async ({
  world,
}) => {
  const filed = await world.client.start({ agent: 'filer', input: 'file it' });
  const gated = await world.client.start({ agent: 'gate', input: 'add 20 and 22' });
  const failing = await world.client.start({ agent: 'broken', input: 'fail' });
  await filed.result();
  await failing.result().catch(() => undefined);
  await awaitingApproval(gated, ['g1']);

  // Each filter finds its run and no other of these (visibility lags its runs a little).
  const expectations: Array<[string[], string, string]> = [
    [['--agent', 'filer', '--status', 'completed'], filed.workflowId, 'completed'],
    [['--agent', 'gate', '--status', 'awaiting_approval'], gated.workflowId, 'awaiting_approval'],
    [['--agent', 'broken', '--status', 'failed'], failing.workflowId, 'failed'],
  ];
  for (const [filters, workflowId, status] of expectations) {
    const rows = await eventually(async () => {
      const found = await listed(world, filters);
      return found.some((row) => row.workflow_id === workflowId) ? found : undefined;
    });
    const ours = rows.filter((row) =>
      [filed.workflowId, gated.workflowId, failing.workflowId].includes(row.workflow_id),
    );
    expect(ours).toEqual([{ workflow_id: workflowId, status }]);
  }

  // Temporal's own query language over the same attributes, and a count.
  const query = `PatchloopAgent = 'gate' AND PatchloopStatus = 'awaiting_approval' AND TaskQueue = '${world.config.taskQueue}'`;
  const found: string[] = [];
  for await (const execution of world.client.temporal.workflow.list({ query })) found.push(execution.workflowId);
  expect(found).toEqual([gated.workflowId]);
  expect((await world.client.temporal.workflow.count(query)).count).toBe(1);

  // Decided from the CLI, the run completes, and its row says so: the attribute was updated in place.
  const approved = await cli(world, ['approve', gated.workflowId, 'g1']);
  expect(approved.code, approved.stderr).toBe(0);
  expect((await gated.result()).transcript.at(-1)).toEqual({ role: 'assistant', content: '42' });
  await eventually(async () => {
    const rows = await listed(world, ['--agent', 'gate', '--status', 'completed']);
    return rows.some((row) => row.workflow_id === gated.workflowId) ? true : undefined;
  });
  expect(await listed(world, ['--agent', 'gate', '--status', 'awaiting_approval'])).toEqual([]);
  expect((await world.client.temporal.workflow.count(query)).count).toBe(0);
  const described = await world.client.temporal.workflow.getHandle(gated.workflowId).describe();
  expect(described.searchAttributes).toMatchObject({
    PatchloopAgent: ['gate'],
    PatchloopStatus: ['completed'],
    PatchloopIterations: [2],
    PatchloopToolCalls: [1],
  });
});
