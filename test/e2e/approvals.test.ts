import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect } from 'vitest';
import { z } from 'zod';
import type { RunHandle } from '../../src/client/patchloop-client';
import { validateToolLinkage, type Message } from '../../src/context';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { defineTool, type Tool } from '../../src/tools/define-tool';
import { clientOn, temporalAddress, temporalCli, type TestWorld } from '../support/temporal';
import { it, type StartWorld } from '../support/fixtures';
import { awaitingApproval, eventually, recordCarriedState, recordHistory } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

/** Tools that count what really ran: a payment (gated) and a lookup (not gated). */
function bank() {
  const transfers: Array<{ to: string; amount: number }> = [];
  const lookups: string[] = [];
  const transfer = defineTool({
    name: 'transfer',
    description: 'Sends money.',
    parameters: z.object({ to: z.string(), amount: z.number().positive() }),
    execute: (args) => {
      transfers.push(args);
      return `sent ${args.amount} to ${args.to}`;
    },
  });
  const balance = defineTool({
    name: 'balance',
    description: 'Reads a balance.',
    parameters: z.object({ account: z.string() }),
    execute: ({ account }) => {
      lookups.push(account);
      return `${account}: 100`;
    },
  });
  // Gated in code: only large amounts need a person.
  const refund = defineTool({
    name: 'refund',
    description: 'Refunds an amount.',
    parameters: z.object({ amount: z.number() }),
    needsApproval: ({ amount }) => amount > 50,
    execute: ({ amount }) => `refunded ${amount}`,
  });
  return { transfers, lookups, tools: [transfer, balance, refund] };
}

const agent = (extra: Partial<AgentDefinitionInput> = {}): AgentDefinitionInput => ({
  name: 'assistant',
  instructions: 'You move money carefully.',
  tools: ['transfer', 'balance', 'refund'],
  needs_approval: ['transfer'],
  ...extra,
});

const transferCall = (id: string, amount = 5) => ({
  id,
  name: 'transfer',
  arguments: `{"to": "bob", "amount": ${amount}}`,
});

/** Activity types scheduled so far, in order, and whether any timer was started. */
async function scheduled(run: RunHandle): Promise<{ activities: string[]; timers: number; events: number }> {
  const history = await run.workflow.fetchHistory();
  const events = history.events ?? [];
  return {
    activities: events.flatMap((event) =>
      event.activityTaskScheduledEventAttributes
        ? [event.activityTaskScheduledEventAttributes.activityType!.name!]
        : [],
    ),
    timers: events.filter((event) => event.timerStartedEventAttributes).length,
    events: events.length,
  };
}

function toolMessages(transcript: Message[]): Array<{ tool_call_id: unknown; content: unknown }> {
  return transcript
    .filter((message) => message['role'] === 'tool')
    .map((message) => ({ tool_call_id: message['tool_call_id'], content: message['content'] }));
}

/** The bank's tools, the gated agent, and a model that asks to pay once, then answers. */
function payWorld(startWorld: StartWorld, tools: Tool[]): Promise<TestWorld> {
  return startWorld({
    tools,
    agents: [agent()],
    fake: { script: [callTools([transferCall('call_pay')]), reply('Paid.')] },
  });
}

const workers: WorkerProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('human approval of tool calls', () => {
  it('waits with no model request or activity (one timer: the label of the wait in the Temporal UI), then runs the approved call', async ({
    startWorld,
  }) => {
    const { transfers, tools } = bank();
    const world = await payWorld(startWorld, tools);
    const run = await world.client.start({ agent: 'assistant', input: 'pay bob 5' });
    const pending = await awaitingApproval(run, ['call_pay']);
    expect(pending).toEqual([
      {
        tool_call_id: 'call_pay',
        tool_name: 'transfer',
        arguments: { to: 'bob', amount: 5 },
        requested_at: expect.any(String),
      },
    ]);
    expect(await run.pendingApprovals()).toEqual(pending);
    const requested = (await run.status()).events.find((event) => event.event_type === 'approval_requested');
    expect(requested).toMatchObject({
      tool_call_id: 'call_pay',
      tool_name: 'transfer',
      arguments: { to: 'bob', amount: 5 },
    });
    // What ran before the wait: the model call and the argument review (the agent was resolved locally).
    const before = await scheduled(run);
    expect(before.activities).toEqual(['llmPhase', 'reviewToolCalls']);
    // One timer, whose summary says in the UI's timeline what the run waits for (it runs 30 days, then another).
    expect(before.timers).toBe(1);
    // Many queries later, still nothing new: no request, no activity, no timer, not one history event.
    for (let index = 0; index < 10; index += 1) expect((await run.status()).state).toBe('awaiting_approval');
    expect(await scheduled(run)).toEqual(before);
    expect(world.fake.requests).toHaveLength(1);
    expect(transfers).toEqual([]);

    expect(await run.approve('call_pay')).toEqual({ tool_call_id: 'call_pay', approved: true });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('Paid.');
    expect(transfers).toEqual([{ to: 'bob', amount: 5 }]);
    expect(toolMessages(result.transcript)).toEqual([{ tool_call_id: 'call_pay', content: '"sent 5 to bob"' }]);
    validateToolLinkage(result.transcript);
    const decided = (await run.status()).events.find((event) => event.event_type === 'approval_decided');
    expect(decided).toMatchObject({ tool_call_id: 'call_pay', approved: true, by: 'update' });
    expect((await run.status()).pending_approvals).toEqual([]);
    world.fake.assertDone();
    await recordHistory(run, 'approval-approved');
  });

  it('a rejection reaches the model as the call result, with the reason, and the run goes on', async ({
    startWorld,
  }) => {
    const { transfers, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent()],
      fake: { script: [callTools([transferCall('call_pay', 500)]), reply('Understood, not paying.')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'pay bob 500' });
    await awaitingApproval(run, ['call_pay']);
    expect(await run.reject('call_pay', 'over the limit')).toEqual({ tool_call_id: 'call_pay', approved: false });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(transfers).toEqual([]);
    const rejection = '<Tool call rejected by the approver. Tool: transfer. Reason: over the limit>';
    // The exact messages the model received next.
    expect(world.fake.requests[1]!.body.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_pay',
            type: 'function',
            function: { name: 'transfer', arguments: '{"to": "bob", "amount": 500}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_pay', content: rejection },
    ]);
    expect(toolMessages(result.transcript)).toEqual([{ tool_call_id: 'call_pay', content: rejection }]);
    validateToolLinkage(result.transcript);
    await recordHistory(run, 'approval-rejected');
  });

  it('a mixed batch runs nothing until every gated call is decided, then commits in declared order', async ({
    startWorld,
  }) => {
    const { transfers, lookups, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent()],
      fake: {
        script: [
          callTools([
            transferCall('call_a', 5),
            { id: 'call_b', name: 'balance', arguments: '{"account": "main"}' },
            transferCall('call_c', 7),
            { id: 'call_d', name: 'refund', arguments: '{"amount": 10}' },
            { id: 'call_e', name: 'refund', arguments: '{"amount": 80}' },
            // Invalid arguments are never put to a person: they fail as an argument error.
            { id: 'call_f', name: 'transfer', arguments: '{"to": "bob"}' },
          ]),
          reply('Done.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'do it all' });
    // The agent gates transfer; refund gates itself above 50; the invalid transfer is not asked about.
    await awaitingApproval(run, ['call_a', 'call_c', 'call_e']);
    await run.approve('call_c', 'fine');
    await awaitingApproval(run, ['call_a', 'call_e']);
    expect(lookups).toEqual([]);
    await run.reject('call_a', 'duplicate');
    expect(lookups).toEqual([]);
    await run.approve('call_e');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(transfers).toEqual([{ to: 'bob', amount: 7 }]);
    expect(lookups).toEqual(['main']);
    const messages = toolMessages(result.transcript);
    expect(messages.map((message) => message.tool_call_id)).toEqual([
      'call_a',
      'call_b',
      'call_c',
      'call_d',
      'call_e',
      'call_f',
    ]);
    expect(messages.slice(0, 5).map((message) => message.content)).toEqual([
      '<Tool call rejected by the approver. Tool: transfer. Reason: duplicate>',
      '"main: 100"',
      '"sent 7 to bob"',
      '"refunded 10"',
      '"refunded 80"',
    ]);
    expect(String(messages[5]!.content)).toContain('invalid arguments');
    validateToolLinkage(result.transcript);
  });

  it('a call id the provider repeats within the batch: the decision is per gated call, nothing else is touched', async ({
    startWorld,
  }) => {
    const { transfers, lookups, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent()],
      fake: {
        script: [
          callTools([transferCall('call_0', 5), { id: 'call_0', name: 'balance', arguments: '{"account": "main"}' }]),
          reply('Done.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'pay and look' });
    const pending = await awaitingApproval(run, ['call_0']);
    expect(pending[0]!.tool_name).toBe('transfer');
    await run.reject('call_0', 'not today');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(transfers).toEqual([]);
    expect(lookups).toEqual(['main']);
    expect(toolMessages(result.transcript)).toEqual([
      { tool_call_id: 'call_0', content: '<Tool call rejected by the approver. Tool: transfer. Reason: not today>' },
      { tool_call_id: 'call_0', content: '"main: 100"' },
    ]);
  });

  it('the validator refuses an unknown or already-decided id before anything is recorded', async ({ startWorld }) => {
    const { tools } = bank();
    const world = await payWorld(startWorld, tools);
    const run = await world.client.start({ agent: 'assistant', input: 'pay' });
    await awaitingApproval(run, ['call_pay']);
    const before = (await scheduled(run)).events;
    await expect(run.approve('call_bogus')).rejects.toThrow(
      /no tool call 'call_bogus' awaits approval \(waiting: call_pay\)/,
    );
    const malformed = await run.workflow
      .executeUpdate('approve', { args: [{ tool_call_id: 'call_pay', approved: 'yes' }] })
      .catch((error: unknown) => error as Error);
    expect((malformed as Error & { cause?: Error }).cause?.message).toMatch(
      /expected \{"tool_call_id": string, "approved": boolean/,
    );
    // Refused by the validator: not one event in history.
    expect((await scheduled(run)).events).toBe(before);
    await run.approve('call_pay');
    await expect(run.reject('call_pay', 'too late')).rejects.toThrow(/already approved|no tool call 'call_pay'/);
    expect((await run.result()).status).toBe('completed');
    const history = await run.workflow.fetchHistory();
    expect(history.events!.filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
  });

  it('an abort while waiting ends the run within 2 s with every waiting call cancelled', async ({ startWorld }) => {
    const { transfers, lookups, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent()],
      fake: {
        script: [
          callTools([transferCall('call_pay'), { id: 'call_look', name: 'balance', arguments: '{"account": "x"}' }]),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'pay' });
    await awaitingApproval(run, ['call_pay']);
    const abortedAt = Date.now();
    await run.abort('changed my mind');
    const result = await run.result();
    expect(Date.now() - abortedAt).toBeLessThan(2000);
    expect(result.status).toBe('aborted');
    expect(toolMessages(result.transcript)).toEqual([
      {
        tool_call_id: 'call_pay',
        content: '<Tool execution cancelled by user. Tool: transfer. Reason: changed my mind>',
      },
      {
        tool_call_id: 'call_look',
        content: '<Tool execution cancelled by user. Tool: balance. Reason: changed my mind>',
      },
    ]);
    expect(transfers).toEqual([]);
    expect(lookups).toEqual([]);
    validateToolLinkage(result.transcript);
    await expect(run.approve('call_pay')).rejects.toThrow(/already completed|the run is aborted/);
    await recordHistory(run, 'approval-abort-while-waiting');
  });

  it('undecided calls are rejected when limits.approval_timeout_seconds passes', async ({ startWorld }) => {
    const { transfers, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent({ limits: { approval_timeout_seconds: 1 } })],
      fake: { script: [callTools([transferCall('call_pay')]), reply('No answer, so no payment.')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'pay' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(transfers).toEqual([]);
    expect(world.fake.requests[1]!.body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_pay',
      content: '<Tool call rejected by the approver. Tool: transfer. Reason: approval timed out>',
    });
    const decided = (await run.status()).events.find((event) => event.event_type === 'approval_decided');
    expect(decided).toMatchObject({ approved: false, reason: 'approval timed out', by: 'timeout' });
    await recordHistory(run, 'approval-timed-out');
  });

  it('continues as new while waiting: the next run still waits, and the model gets the same requests', async ({
    startWorld,
  }) => {
    const { tools } = bank();
    const script = [callTools([transferCall('call_pay')]), reply('Paid.')];
    const world = await startWorld({ tools, agents: [agent()], fake: { script: [...script, ...script] } });
    const plain = await world.client.start({ agent: 'assistant', input: 'pay bob 5' });
    await awaitingApproval(plain, ['call_pay']);
    await plain.approve('call_pay');
    await plain.result();

    const continuing = await world.client.start({
      agent: 'assistant',
      input: 'pay bob 5',
      continue_as_new: { max_history_events: 10 },
    });
    const firstRunId = (await continuing.workflow.describe()).runId;
    await eventually(
      async () => {
        const status = await continuing.status();
        return status.state === 'awaiting_approval' && Number(status['continued_as_new' as keyof typeof status]) >= 1
          ? true
          : undefined;
      },
      30_000,
      'a continued run that still waits',
    );
    expect((await continuing.workflow.describe()).runId).not.toBe(firstRunId);
    expect((await continuing.pendingApprovals()).map((entry) => entry.tool_call_id)).toEqual(['call_pay']);
    await recordCarriedState(continuing, 'agent-run-v2');
    await continuing.approve('call_pay');
    const result = await continuing.result();
    expect(result.status).toBe('completed');
    validateToolLinkage(result.transcript);
    expect(toolMessages(result.transcript)).toEqual([{ tool_call_id: 'call_pay', content: '"sent 5 to bob"' }]);
    // Byte-identical requests to the run that never continued.
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body.messages));
    expect(bodies).toHaveLength(4);
    expect(bodies[2]).toBe(bodies[0]);
    expect(bodies[3]).toBe(bodies[1]);
    world.fake.assertDone();
    await recordHistory(continuing, 'approval-continues-as-new', firstRunId);
    await recordHistory(continuing, 'approval-continued-as-new');
  });

  it('is decided from the temporal CLI (update approve)', async ({ startWorld }) => {
    const { transfers, tools } = bank();
    const world = await payWorld(startWorld, tools);
    const run = await world.client.start({ agent: 'assistant', input: 'pay' });
    await awaitingApproval(run, ['call_pay']);
    const update = await temporalCli(
      'workflow',
      'update',
      'execute',
      '-w',
      run.workflowId,
      '--name',
      'approve',
      '--input',
      JSON.stringify({ tool_call_id: 'call_pay', approved: true }),
    );
    expect(update.status, update.stderr).toBe(0);
    expect(update.stdout).toContain('call_pay');
    expect((await run.result()).status).toBe('completed');
    expect(transfers).toHaveLength(1);
  });

  it('a session turn waits for approval; send answers when the turn ends', async ({ startWorld }) => {
    const { transfers, tools } = bank();
    const world = await startWorld({
      tools,
      agents: [agent()],
      fake: { script: [callTools([transferCall('call_pay')]), reply('Paid bob.')] },
    });
    const session = await world.client.startSession({ agent: 'assistant' });
    const replied = session.send('pay bob 5');
    await awaitingApproval(session, ['call_pay']);
    await session.approve('call_pay', 'ok');
    expect(await replied).toMatchObject({ status: 'completed', reply: 'Paid bob.' });
    expect(transfers).toHaveLength(1);
    await session.close();
  });

  it('a run waiting for approval survives kill -9 of its worker; the decision comes later', async () => {
    const fake = await FakeModelServer.start({
      script: [callTools([{ id: 'call_add', name: 'add', arguments: '{"a": 2, "b": 3}' }]), reply('5')],
    });
    const taskQueue = `approval-crash-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    cleanups.push(
      () => client.close(),
      () => fake.close(),
    );
    const agents = [
      {
        name: 'assistant',
        instructions: 'You add.',
        tools: ['add'],
        needs_approval: ['add'],
        limits: { heartbeat_timeout_seconds: 2 },
      },
    ];
    const start = async () => {
      const worker = await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents });
      workers.push(worker);
      return worker;
    };
    const first = await start();
    const run = await client.start({ agent: 'assistant', input: 'add 2 and 3' });
    await awaitingApproval(run, ['call_add']);
    await first.kill('SIGKILL');
    await start();
    // The new worker rebuilds the waiting run from history and answers for it.
    expect((await awaitingApproval(run, ['call_add']))[0]!.arguments).toEqual({ a: 2, b: 3 });
    await run.approve('call_add');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(toolMessages(result.transcript)).toEqual([{ tool_call_id: 'call_add', content: '5' }]);
    expect(fake.requests).toHaveLength(2);
    validateToolLinkage(result.transcript);
  });
});
