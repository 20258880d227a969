import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { validateToolLinkage } from '../../src/context';
import type { RunHandle } from '../../src/client/patchloop-client';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { scriptsByAgent } from '../../support/agent-scripts';
import { runCli } from '../support/cli';
import { clientOn, temporalAddress, temporalCli } from '../support/temporal';
import { awaitingApproval, eventually } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

const agents: AgentDefinitionInput[] = [
  { name: 'versioned_pinned', instructions: 'You add with approval.', tools: ['add'], needs_approval: ['add'] },
  { name: 'versioned_chain', instructions: 'You add in a chain.', tools: ['add', 'wait'], needs_approval: ['add'] },
  { name: 'versioned_plain', instructions: 'You answer.' },
  { name: 'versioned_chat', instructions: 'You chat.' },
];

const workers: WorkerProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** `temporal worker deployment set-current-version`, as the README's runbook says (once the version polls). */
async function makeCurrent(deployment: string, buildId: string): Promise<void> {
  await eventually(
    async () => {
      const set = await temporalCli(
        'worker',
        'deployment',
        'set-current-version',
        '--deployment-name',
        deployment,
        '--build-id',
        buildId,
        '--yes',
      );
      return set.status === 0 ? true : undefined;
    },
    60_000,
    `${buildId} current`,
  );
}

/** The build the run's current execution is pinned to, as Temporal describes it. */
async function buildOf(run: RunHandle, runId?: string): Promise<string | undefined> {
  const handle = runId ? run.workflow.client.getHandle(run.workflowId, runId) : run.workflow;
  const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
  return info?.deploymentVersion?.buildId ?? undefined;
}

describe('Worker Versioning: runs stay on their build, chains and sessions move at continue-as-new', () => {
  it('b1 runs stay pinned after b2 becomes current; new runs start on b2; a chain and a session move to b2; rollback sends new runs to b1', async () => {
    const call = (id: string) => ({ id, name: 'add', arguments: '{"a": 2, "b": 3}' });
    const scripts = scriptsByAgent({
      versioned_pinned: {
        instructions: 'You add with approval.',
        steps: [callTools([call('a1')]), reply('A done'), callTools([call('a2')]), reply('A2 done')],
      },
      versioned_chain: {
        instructions: 'You add in a chain.',
        // After the decision, iterations enough for the history to pass the policy again.
        steps: [
          callTools([call('l1')]),
          ...['w1', 'w2', 'w3'].map((id) => callTools([{ id, name: 'wait', arguments: '{"seconds": 0}' }])),
          reply('L done'),
        ],
      },
      versioned_plain: { instructions: 'You answer.', steps: [reply('B done'), reply('C done')] },
      versioned_chat: { instructions: 'You chat.', steps: [reply('chat 1'), reply('chat 2'), reply('chat 3')] },
    });
    const fake = await FakeModelServer.start({ responder: scripts.responder });
    const taskQueue = `versions-${randomUUID()}`;
    const deployment = `patchloop-${randomUUID().slice(0, 8)}`;
    const client = await clientOn(taskQueue);
    cleanups.push(
      () => client.close(),
      () => fake.close(),
    );
    // b1's workers take their version from the environment, b2's from the flags: the README shows both.
    const startWorker = async (buildId: string) => {
      const worker = await spawnWorker({
        address: temporalAddress(),
        taskQueue,
        modelUrl: fake.url,
        agents,
        ...(buildId === 'b1'
          ? { env: { PATCHLOOP_DEPLOYMENT_NAME: deployment, PATCHLOOP_BUILD_ID: buildId } }
          : { args: ['--deployment-name', deployment, '--build-id', buildId] }),
      });
      workers.push(worker);
      return worker;
    };

    const b1 = await startWorker('b1');
    expect(b1.output()).toContain(`deployment '${deployment}' build 'b1'`);
    await makeCurrent(deployment, 'b1');
    const pinned = await client.start({ agent: 'versioned_pinned', input: 'add 2 and 3' });
    const chain = await client.start({
      agent: 'versioned_chain',
      input: 'add 2 and 3',
      continue_as_new: { max_history_events: 30 },
    });
    const session = await client.startSession({ agent: 'versioned_chat' });
    expect((await session.send('first')).reply).toBe('chat 1');
    await awaitingApproval(pinned, ['a1']);
    await awaitingApproval(chain, ['l1']);
    expect([await buildOf(pinned), await buildOf(chain), await buildOf(session)]).toEqual(['b1', 'b1', 'b1']);

    await startWorker('b2');
    await makeCurrent(deployment, 'b2');
    const fresh = await client.start({ agent: 'versioned_plain', input: 'hello' });
    expect((await fresh.result()).answer).toBe('B done');
    expect(await buildOf(fresh)).toBe('b2');

    // The deployment as an operator watches it: b2 current, b1 draining.
    const described = await temporalCli('worker', 'deployment', 'describe', '--name', deployment, '--output', 'json');
    expect(described.status, described.stderr).toBe(0);
    const routing = JSON.parse(described.stdout) as {
      routingConfig: { currentVersionBuildID: string };
      versionSummaries: Array<{ BuildID: string; drainageStatus: string }>;
    };
    expect(routing.routingConfig.currentVersionBuildID).toBe('b2');
    // b1 still has pinned runs: it drains.
    expect(routing.versionSummaries.find((version) => version.BuildID === 'b1')?.drainageStatus).toBe('draining');
    // `show` says which build a run is on.
    const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: taskQueue };
    expect((await runCli(['show', pinned.workflowId], env)).stdout).toContain(`build: ${deployment}/b1 (pinned)`);
    // `list` too (by agent: the dev server holds every test's runs), once the visibility store has them.
    const listedBuild = async (agent: string, workflowId: string) => {
      const listed = JSON.parse((await runCli(['list', '--agent', agent, '--json'], env)).stdout) as Array<{
        workflow_id: string;
        build?: string;
      }>;
      return listed.find((entry) => entry.workflow_id === workflowId)?.build;
    };
    expect(await eventually(() => listedBuild('versioned_plain', fresh.workflowId))).toBe(`${deployment}/b2`);
    expect(await eventually(() => listedBuild('versioned_pinned', pinned.workflowId))).toBe(`${deployment}/b1`);
    // Pinned: the run that started on b1 finishes there.
    await pinned.approve('a1');
    expect((await pinned.result()).answer).toBe('A done');
    expect(await buildOf(pinned)).toBe('b1');

    // A chain moves at its next continue-as-new, with its state: the next run starts on b2.
    const firstChainRun = (chain.workflow as { firstExecutionRunId?: string }).firstExecutionRunId!;
    await chain.approve('l1');
    const chained = await chain.result();
    expect(chained.answer).toBe('L done');
    validateToolLinkage(chained.transcript);
    expect(chained.transcript.find((message) => message['tool_call_id'] === 'l1')).toMatchObject({ content: '5' });
    expect(await buildOf(chain, firstChainRun)).toBe('b1');
    expect(await buildOf(chain)).toBe('b2');
    const moved = (await chain.status()).events.filter((event) => event.event_type === 'continued_as_new');
    expect(moved).toContainEqual(expect.objectContaining({ to_current_build: true }));

    // A session moves at its next idle turn boundary: the turn after it is served on b2.
    const firstSessionRun = (await session.workflow.describe()).runId;
    expect((await session.send('second')).reply).toBe('chat 2');
    await eventually(async () => ((await session.workflow.describe()).runId !== firstSessionRun ? true : undefined));
    expect((await session.send('third')).reply).toBe('chat 3');
    expect(await buildOf(session)).toBe('b2');
    const conversation = (await session.transcript()).filter((message) => message['role'] !== 'system');
    expect(conversation.map((message) => message['content'])).toEqual([
      'first',
      'chat 1',
      'second',
      'chat 2',
      'third',
      'chat 3',
    ]);

    // Rollback: b1 current again, new runs start there.
    await makeCurrent(deployment, 'b1');
    const after = await client.start({ agent: 'versioned_plain', input: 'hello again' });
    expect((await after.result()).answer).toBe('C done');
    expect(await buildOf(after)).toBe('b1');

    // A pinned run whose build has no worker left waits, nothing lost, until one polls again.
    const stranded = await client.start({ agent: 'versioned_pinned', input: 'add 2 and 3 again' });
    await awaitingApproval(stranded, ['a2']);
    await workers.splice(0, 1)[0]!.kill('SIGKILL');
    await makeCurrent(deployment, 'b2');
    const approval = stranded.approve('a2');
    const status = await stranded.workflow.describe();
    expect([status.status.name, await buildOf(stranded)]).toEqual(['RUNNING', 'b1']);
    await startWorker('b1');
    await approval;
    expect((await stranded.result()).answer).toBe('A2 done');
    expect(await buildOf(stranded)).toBe('b1');
    scripts.assertDone();
  });
});
