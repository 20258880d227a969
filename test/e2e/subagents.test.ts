import { describe, expect } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { callTools, failWith, reply, toolCall as call, withUsage as usage } from '../../src/fake-model/steps';
import { digestText, type AgentDefinitionInput, type RunEvent } from '../../src/runtime';
import { scriptsByAgent } from '../../support/agent-scripts';
import { listedWorkflows } from '../support/temporal';
import { runCli } from '../support/cli';
import { eventOf, eventually, recordHistory, startedChild } from '../support/wait';

const researcher: AgentDefinitionInput = {
  name: 'researcher',
  instructions: 'You research questions.',
  tools: ['add'],
  subagents: ['helper', { agent: 'critic', tool_name: 'ask_critic', description: 'Reviews a draft.' }],
};
const helper: AgentDefinitionInput = { name: 'helper', instructions: 'You look things up.', tools: ['add', 'wait'] };
const critic: AgentDefinitionInput = { name: 'critic', instructions: 'You criticize drafts.' };
const agents = [researcher, helper, critic];
const instructions = Object.fromEntries(agents.map((agent) => [agent.name, agent.instructions]));

/** A world whose fake model answers each agent from its own script. */
async function agentWorld(
  startWorld: StartWorld,
  steps: Record<string, Parameters<typeof scriptsByAgent>[0][string]['steps']>,
) {
  const scripts = scriptsByAgent(
    Object.fromEntries(
      Object.entries(steps).map(([agent, list]) => [agent, { instructions: instructions[agent]!, steps: list }]),
    ),
  );
  const world = await startWorld({ agents, fake: { responder: scripts.responder } });
  return { world, scripts };
}

const toolMessage = (messages: Array<Record<string, unknown>>, id: string) =>
  messages.find((message) => message['role'] === 'tool' && message['tool_call_id'] === id);

describe('sub-agents: agents that call agents as durable child runs', () => {
  it('a delegation: the child run gets the task, its answer is the tool result, usage rolls up', async ({
    startWorld,
  }) => {
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [
        callTools([call('s1', 'helper', { input: 'find the capital of France', context: 'for a quiz' })], usage(10, 5)),
        reply('Paris, says my helper.', usage(20, 4)),
      ],
      helper: [reply('Paris', usage(7, 3))],
    });
    const run = await world.client.start({ agent: 'researcher', input: 'What is the capital of France?' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('Paris, says my helper.');
    // The child saw its own instructions and the task, nothing of the caller's conversation.
    const [system, ...rest] = scripts.requests('helper')[0]!.messages;
    expect(system).toMatchObject({ role: 'system', content: expect.stringContaining('You look things up.') });
    expect(system!['content']).not.toContain('You research questions.');
    expect(rest).toEqual([
      { role: 'user', content: 'Context from the caller:\nfor a quiz\n\nTask:\nfind the capital of France' },
    ]);
    expect(toolMessage(scripts.requests('researcher')[1]!.messages, 's1')).toEqual({
      role: 'tool',
      tool_call_id: 's1',
      content: '"Paris"',
    });
    // The caller's usage holds its child's.
    expect(result.usage).toMatchObject({ prompt_tokens: 37, completion_tokens: 12, total_tokens: 49 });
    const childId = await startedChild(run, 's1');
    // The caller's id, its chain's first run, the agent, the iteration, the call.
    const chain = digestText((run.workflow as { firstExecutionRunId?: string }).firstExecutionRunId!).slice(0, 8);
    expect(childId).toBe(`${run.workflowId}::${chain}::helper::1::s1`);
    const events = (await run.status()).events;
    expect(events.find((event) => event.event_type === 'subagent_started')).toMatchObject({
      tool_call_id: 's1',
      agent: 'helper',
      child_workflow_id: childId,
      depth: 1,
    });
    expect(events.find((event) => event.event_type === 'subagent_finished')).toMatchObject({
      child_workflow_id: childId,
      status: 'completed',
      usage: { total_tokens: 10 },
    });
    // The child is a run of its own, with a valid transcript and its caller as parent.
    const child = world.client.run(childId);
    expect((await child.result()).status).toBe('completed');
    validateToolLinkage(await child.transcript());
    const childStatus = await child.status();
    expect(childStatus.events[0]!.origin).toMatchObject({
      parent_agent_call_id: run.workflowId,
      session_id: run.workflowId,
    });
    // `show` lists the child run, with the command that shows it.
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const shown = await eventually(async () => {
      const out = await runCli(['show', run.workflowId], env);
      return out.stdout.includes('child runs') ? out.stdout : undefined;
    });
    expect(shown).toContain('child runs (sub-agents and forks): 1');
    expect(shown).toContain(`completed  ${childId} (patchloop show ${childId}`);
    validateToolLinkage(result.transcript);
    scripts.assertDone();
    await recordHistory(run, 'subagent-delegation');
  });

  it('two sub-agents in one batch run at once, beside a plain tool', async ({ startWorld }) => {
    const slow = { firstChunkDelayMs: 1500 };
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [
        callTools([
          call('h', 'helper', { input: 'look up A' }),
          call('a', 'add', { a: 2, b: 3 }),
          call('c', 'ask_critic', { input: 'review B' }),
        ]),
        reply('both done'),
      ],
      helper: [reply('A found', slow)],
      critic: [reply('B is weak', slow)],
    });
    const run = await world.client.start({ agent: 'researcher', input: 'research A and B' });
    const result = await run.result();
    expect(result.answer).toBe('both done');
    const [helperCall, criticCall] = [scripts.requests('helper')[0], scripts.requests('critic')[0]].map((body) =>
      world.fake.requests.find((request) => request.body === body)!,
    );
    // Each child's model call began before the other's ended.
    expect(helperCall!.receivedAt).toBeLessThan(criticCall!.completedAt!);
    expect(criticCall!.receivedAt).toBeLessThan(helperCall!.completedAt!);
    const messages = scripts.requests('researcher')[1]!.messages;
    expect(messages.slice(-3)).toEqual([
      { role: 'tool', tool_call_id: 'h', content: '"A found"' },
      { role: 'tool', tool_call_id: 'a', content: '5' },
      { role: 'tool', tool_call_id: 'c', content: '"B is weak"' },
    ]);
    scripts.assertDone();
  });

  it('a child that fails, and a call past the depth limit, give error results that say which', async ({
    startWorld,
  }) => {
    const recursive: AgentDefinitionInput = {
      name: 'recursive',
      instructions: 'You recurse.',
      subagents: ['recursive', 'helper'],
      limits: { max_agent_depth: 1 },
    };
    const scripts = scriptsByAgent({
      recursive: {
        instructions: 'You recurse.',
        steps: [
          callTools([call('r1', 'recursive', { input: 'go deeper' }), call('h1', 'helper', { input: 'x' })]),
          // The child (depth 1) may not go deeper.
          callTools([call('r2', 'recursive', { input: 'deeper still' })]),
          reply('stopped at the limit'),
          reply('done'),
        ],
      },
      helper: { instructions: 'You look things up.', steps: [failWith(400, { message: 'model refuses this' })] },
    });
    const world = await startWorld({ agents: [recursive, helper], fake: { responder: scripts.responder } });
    const run = await world.client.start({ agent: 'recursive', input: 'start' });
    const result = await run.result();
    expect(result.answer).toBe('done');
    const last = scripts.requests('recursive').at(-1)!.messages;
    expect(JSON.parse(toolMessage(last, 'r1')!['content'] as string)).toBe('stopped at the limit');
    expect(JSON.parse(toolMessage(last, 'h1')!['content'] as string).error).toMatch(
      /^Tool 'helper' failed .*: the helper agent's run failed: .*model refuses this/,
    );
    const deeper = scripts.requests('recursive')[2]!.messages;
    expect(JSON.parse(toolMessage(deeper, 'r2')!['content'] as string).error).toContain(
      'agent depth limit 1 reached: the recursive agent was not called',
    );
    const finished = (await run.status()).events.filter((event) => event.event_type === 'subagent_finished');
    expect(finished.map((event) => [(event as { agent: string }).agent, (event as { status: string }).status])).toEqual(
      expect.arrayContaining([
        ['recursive', 'completed'],
        ['helper', 'failed'],
      ]),
    );
    scripts.assertDone();
  });

  it('a child that fails after spending is charged too: its failure says what it spent', async ({ startWorld }) => {
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [
        callTools([call('s1', 'helper', { input: 'add, then give up' })], usage(10, 5)),
        reply('the helper failed', usage(20, 4)),
      ],
      helper: [
        callTools([call('a1', 'add', { a: 1, b: 1 })], usage(7, 3)),
        failWith(400, { message: 'model refuses this' }),
      ],
    });
    const run = await world.client.start({ agent: 'researcher', input: 'add', budget: { max_llm_calls: 10 } });
    const result = await run.result();
    expect(result.answer).toBe('the helper failed');
    // The caller's two calls and the child's one answered call (its refused one reported no usage).
    expect(result.usage).toMatchObject({ prompt_tokens: 37, completion_tokens: 12, total_tokens: 49 });
    expect(result.budget).toMatchObject({ spent: { max_llm_calls: 3 } });
    const finished = (await run.status()).events.find((event) => event.event_type === 'subagent_finished');
    expect(finished).toMatchObject({ status: 'failed', usage: { total_tokens: 10 } });
    scripts.assertDone();
    await recordHistory(run, 'subagent-failure-charged');
  });

  it('a budget covers the tree: the child gets what is left and its spend is charged back', async ({ startWorld }) => {
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [callTools([call('s1', 'helper', { input: 'add things' })]), reply('out of budget, but done')],
      helper: [
        callTools([call('a1', 'add', { a: 1, b: 1 })]),
        callTools([call('a2', 'add', { a: 1, b: 2 })]),
        callTools([call('a3', 'add', { a: 1, b: 3 })]),
      ],
    });
    const run = await world.client.start({
      agent: 'researcher',
      input: 'add',
      budget: { max_llm_calls: 4, on_exhausted: 'ask' },
    });
    // One call of its own and the child's three: the parent waits for more before its next call.
    await eventually(async () => ((await run.status()).state === 'awaiting_budget' ? true : undefined));
    const child = world.client.run(await startedChild(run, 's1'));
    const childResult = await child.result();
    expect(childResult.status).toBe('budget_exhausted');
    expect(childResult.budget).toMatchObject({
      limit: { max_llm_calls: 3 },
      spent: { max_llm_calls: 3 },
      exceeded: ['max_llm_calls'],
    });
    expect((await run.status()).budget).toMatchObject({ spent: { max_llm_calls: 4 } });
    await run.extendBudget({ llm_calls: 1 });
    const result = await run.result();
    expect(result.answer).toBe('out of budget, but done');
    expect(result.budget).toMatchObject({ limit: { max_llm_calls: 5 }, spent: { max_llm_calls: 5 } });
    expect(
      JSON.parse(toolMessage(scripts.requests('researcher')[1]!.messages, 's1')!['content'] as string).error,
    ).toContain("the helper agent's run ran out of budget (max_llm_calls)");
    scripts.assertDone();
  });
});

describe('decisions reach the top of the tree', () => {
  it("a grandchild's gated call is listed on the top run and decided there, through the CLI (depth 2)", async ({
    startWorld,
  }) => {
    const tree: AgentDefinitionInput[] = [
      { name: 'manager', instructions: 'You manage.', subagents: ['lead'] },
      { name: 'lead', instructions: 'You lead.', subagents: ['clerk'] },
      { name: 'clerk', instructions: 'You add.', tools: ['add'], needs_approval: ['add'] },
    ];
    const scripts = scriptsByAgent({
      manager: {
        instructions: 'You manage.',
        steps: [callTools([call('m1', 'lead', { input: 'get 2+3 added' })]), reply('the clerk says 5')],
      },
      lead: {
        instructions: 'You lead.',
        steps: [callTools([call('l1', 'clerk', { input: 'add 2 and 3' })]), reply('5')],
      },
      clerk: {
        instructions: 'You add.',
        steps: [callTools([call('c1', 'add', { a: 2, b: 3 })]), reply('5')],
      },
    });
    const world = await startWorld({ agents: tree, fake: { responder: scripts.responder } });
    const run = await world.client.start({ agent: 'manager', input: 'add 2 and 3 through your team' });
    const leadId = await startedChild(run, 'm1');
    const clerkId = await startedChild(world.client.run(leadId), 'l1');
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const listed = await eventually(async () => {
      const out = await runCli(['approvals', run.workflowId], env);
      const pending = (JSON.parse(out.stdout) as { pending_approvals: unknown[] }).pending_approvals;
      return pending.length > 0 ? pending : undefined;
    });
    expect(listed).toEqual([
      {
        tool_call_id: 'c1',
        tool_name: 'add',
        arguments: { a: 2, b: 3 },
        requested_at: expect.any(String),
        workflow_id: clerkId,
        agent: 'clerk',
      },
    ]);
    // Every run on the way reports it waits: status and the state search attributes use.
    expect((await run.status()).state).toBe('awaiting_approval');
    expect((await world.client.run(leadId).status()).state).toBe('awaiting_approval');
    await eventually(async () =>
      (
        await listedWorkflows(
          `WorkflowId = '${run.workflowId}' AND ExecutionStatus = 'Running' AND PatchloopStatus = 'awaiting_approval'`,
        )
      ).length > 0
        ? true
        : undefined,
    );
    // `show` lists the child as it runs: waiting for the decision, not merely running.
    const children = await eventually(async () => {
      const shown = JSON.parse((await runCli(['show', run.workflowId, '--json'], env)).stdout) as {
        children?: Array<{ workflow_id: string; status: string }>;
      };
      return shown.children?.[0]?.status === 'awaiting_approval' ? shown.children : undefined;
    });
    expect(children).toEqual([expect.objectContaining({ workflow_id: leadId, status: 'awaiting_approval' })]);
    // An id no run of the tree waits with is refused, naming what waits.
    const wrong = await runCli(['approve', run.workflowId, 'c9'], env);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout + wrong.stderr).toContain("no tool call 'c9' awaits approval");
    const approved = await runCli(['approve', run.workflowId, 'c1', '--reason', 'fine'], env);
    expect(approved.code).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ tool_call_id: 'c1', approved: true, workflow_id: clerkId });
    const result = await run.result();
    expect(result.answer).toBe('the clerk says 5');
    expect(toolMessage(scripts.requests('clerk')[1]!.messages, 'c1')).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: '5',
    });
    const decided = (await world.client.run(clerkId).status()).events.find(
      (event) => event.event_type === 'approval_decided',
    );
    expect(decided).toMatchObject({ tool_call_id: 'c1', approved: true, reason: 'fine' });
    expect((await run.status()).pending_approvals).toEqual([]);
    scripts.assertDone();
  });
});

/** A manager whose clerk's additions wait for a person. */
const clerkTree: AgentDefinitionInput[] = [
  { name: 'manager', instructions: 'You manage.', subagents: ['clerk'] },
  { name: 'clerk', instructions: 'You add.', tools: ['add'], needs_approval: ['add'] },
];

describe('sub-agents across continue-as-new', () => {
  it('the parent continues as new while its child waits for a decision, finds the child again and gets its answer', async ({
    startWorld,
  }) => {
    const scripts = scriptsByAgent({
      manager: {
        instructions: 'You manage.',
        steps: [
          callTools([call('m1', 'clerk', { input: 'add 2 and 3' })], usage(10, 2)),
          reply('5 it is', usage(12, 2)),
        ],
      },
      clerk: {
        instructions: 'You add.',
        steps: [callTools([call('c1', 'add', { a: 2, b: 3 })], usage(5, 1)), reply('5', usage(6, 1))],
      },
    });
    const world = await startWorld({ agents: clerkTree, fake: { responder: scripts.responder } });
    const run = await world.client.start({
      agent: 'manager',
      input: 'add 2 and 3 through the clerk',
      continue_as_new: { max_history_events: 10 },
    });
    const clerkId = await startedChild(run, 'm1');
    // The parent's history passed its policy while it waited for the clerk: it continued as new, and
    // its new run lists the clerk's call (carried, and found again).
    const pending = await eventually(async () => {
      const status = await run.status();
      return (status as { continued_as_new?: number }).continued_as_new! >= 1 && status.pending_approvals.length > 0
        ? status.pending_approvals
        : undefined;
    });
    expect(pending).toEqual([expect.objectContaining({ tool_call_id: 'c1', workflow_id: clerkId, agent: 'clerk' })]);
    // The new run says so in its search attribute too (the UI's and `list --status`'s view).
    await eventually(async () =>
      (
        await listedWorkflows(
          `WorkflowId = '${run.workflowId}' AND ExecutionStatus = 'Running' AND PatchloopStatus = 'awaiting_approval'`,
        )
      ).length === 1
        ? true
        : undefined,
    );
    expect(await run.approve('c1')).toMatchObject({ tool_call_id: 'c1', approved: true, workflow_id: clerkId });
    const result = await run.result();
    expect(result.answer).toBe('5 it is');
    expect(toolMessage(scripts.requests('manager')[1]!.messages, 'm1')!['content']).toBe('"5"');
    // Usage of the whole chain: the parent's two calls and the clerk's two.
    expect(result.usage).toMatchObject({ total_tokens: 12 + 14 + 6 + 7 });
    // The clerk ran once: one execution with its id, each of its model calls made once.
    expect(await listedWorkflows(`WorkflowId = '${clerkId}'`)).toHaveLength(1);
    expect(scripts.requests('clerk')).toHaveLength(2);
    // What Temporal did at the parent's continue-as-new: the clerk's parent is the first run, closed as
    // continued; the clerk was abandoned, as its parent-close policy says, and so ran on to completion.
    const described = await world.client.run(clerkId).workflow.describe();
    expect(described.status.name).toBe('COMPLETED');
    const parentRun = await run.workflow.client.getHandle(run.workflowId, described.parentExecution!.runId!).describe();
    expect(parentRun.status.name).toBe('CONTINUED_AS_NEW');
    const events = (await run.status()).events.map((event) => event.event_type);
    expect(events.indexOf('continued_as_new')).toBeLessThan(events.lastIndexOf('subagent_finished'));
    validateToolLinkage(result.transcript);
    scripts.assertDone();
    // Both runs of the chain: the one that continued as new while its child ran, and the one that found it.
    await recordHistory(run, 'subagent-parent-continued-as-new', described.parentExecution!.runId!);
    await recordHistory(run, 'subagent-parent-continues-as-new');
    // The same, with the search attribute set when the new run finds its child again.
    await recordHistory(run, 'subagent-reattached-child-visible');
  });
});

describe('sub-agents replayed at every workflow task (no workflow cache)', () => {
  it('a tree with a decision at depth 1 and a continue-as-new while the child waits replays without a task failure', async ({
    startWorld,
  }) => {
    const scripts = scriptsByAgent({
      manager: {
        instructions: 'You manage.',
        steps: [callTools([call('m1', 'clerk', { input: 'add 2 and 3' })]), reply('5 it is')],
      },
      clerk: { instructions: 'You add.', steps: [callTools([call('c1', 'add', { a: 2, b: 3 })]), reply('5')] },
    });
    // Every task replays the run's history from its start: a determinism error would fail a task.
    const world = await startWorld({
      agents: clerkTree,
      fake: { responder: scripts.responder },
      config: { workerTuning: { maxCachedWorkflows: 0 } },
    });
    const run = await world.client.start({
      agent: 'manager',
      input: 'add 2 and 3 through the clerk',
      continue_as_new: { max_history_events: 10 },
    });
    // Waited for without queries: a worker without a cache may drop a query that arrives while it
    // evicts the run (sdk-core: "leftover buffered tasks when evicting run"). The clerk's own state says
    // it waits; the decision is sent to the top run until it knows of the call (an update is not dropped).
    await eventually(async () =>
      (await listedWorkflows(`ParentWorkflowId = '${run.workflowId}' AND PatchloopStatus = 'awaiting_approval'`))
        .length > 0
        ? true
        : undefined,
    );
    await eventually(() =>
      run.approve('c1').then(
        () => true,
        () => undefined,
      ),
    );
    expect((await run.result()).answer).toBe('5 it is');
    const clerkId = await startedChild(run, 'm1');
    for (const id of [run.workflowId, clerkId]) {
      const executions = await listedWorkflows(`WorkflowId = '${id}'`);
      expect(executions.length).toBeGreaterThan(0);
      for (const execution of executions) {
        const history = await world.client.temporal.workflow
          .getHandle(id, (execution as { execution: { runId?: string } }).execution.runId)
          .fetchHistory();
        // EVENT_TYPE_WORKFLOW_TASK_FAILED is 9.
        expect(history.events?.filter((event) => Number(event.eventType) === 9)).toEqual([]);
      }
    }
    scripts.assertDone();
  });
});

describe('aborting runs with sub-agents', () => {
  it('aborting the parent aborts the child with the same reason; both transcripts stay valid', async ({
    startWorld,
  }) => {
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [callTools([call('s1', 'helper', { input: 'take your time' })], usage(10, 5))],
      helper: [callTools([call('w1', 'wait', { seconds: 60 })], usage(7, 3))],
    });
    const run = await world.client.start({ agent: 'researcher', input: 'go' });
    const child = world.client.run(await startedChild(run, 's1'));
    await eventOf(child, 'tool_call_start');
    const abortedAt = Date.now();
    await run.abort('the user left');
    const [parentResult, childResult] = await Promise.all([run.result(), child.result()]);
    const closedWithin = Date.now() - abortedAt;
    expect(parentResult.status).toBe('aborted');
    expect(parentResult.abort_reason).toBe('the user left');
    validateToolLinkage(parentResult.transcript);
    expect(toolMessage(parentResult.transcript, 's1')!['content']).toContain('cancel');
    expect(childResult.status).toBe('aborted');
    expect(childResult.abort_reason).toBe('the user left');
    validateToolLinkage(await child.transcript());
    expect(closedWithin).toBeLessThan(15_000);
    // What the child spent before the abort counts in its caller's usage.
    expect(childResult.usage).toMatchObject({ total_tokens: 10 });
    expect(parentResult.usage).toMatchObject({ total_tokens: 15 + 10 });
    const finished = (await run.status()).events.find((event) => event.event_type === 'subagent_finished');
    expect(finished).toMatchObject({ status: 'cancelled', usage: { total_tokens: 10 } });
    scripts.assertDone();
  });

  it('aborting a child alone gives its caller an error result, and the caller goes on', async ({ startWorld }) => {
    const { world, scripts } = await agentWorld(startWorld, {
      researcher: [callTools([call('s1', 'helper', { input: 'take your time' })]), reply('I will do it myself')],
      helper: [{ kind: 'hang', chunks: ['thinking '] }],
    });
    const run = await world.client.start({ agent: 'researcher', input: 'go' });
    const child = world.client.run(await startedChild(run, 's1'));
    await eventOf(child, 'llm_call_start');
    await child.abort('taking too long');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('I will do it myself');
    expect(
      JSON.parse(toolMessage(scripts.requests('researcher')[1]!.messages, 's1')!['content'] as string).error,
    ).toContain("the helper agent's run was aborted: taking too long");
    expect((await child.result()).status).toBe('aborted');
    const finished = (await run.status()).events.find(
      (event): event is Extract<RunEvent, { event_type: 'subagent_finished' }> =>
        event.event_type === 'subagent_finished',
    );
    expect(finished?.status).toBe('aborted');
    scripts.assertDone();
  });
});
