import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { validateToolLinkage, type Message } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput, RunEvent, RunStatus } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { type TestWorld } from '../support/temporal';
import { awaitingApproval, recordHistory } from '../support/wait';

const TRIAGE = 'You are the front desk. Find out what the customer needs and hand them to the right agent.';
const BILLING = 'You answer billing questions: invoices, refunds, payment dates.';

const invoice = defineTool({
  name: 'invoice',
  description: 'Reads an invoice.',
  parameters: z.object({ number: z.string() }),
  execute: ({ number }) => ({ number, total: 120, status: 'paid' }),
});

const agents = (extra: Partial<AgentDefinitionInput> = {}): AgentDefinitionInput[] => [
  { name: 'triage', instructions: TRIAGE, handoffs: ['billing', 'tech'], ...extra },
  {
    name: 'billing',
    instructions: BILLING,
    model: 'billing-model',
    tools: ['invoice'],
    handoffs: [{ agent: 'triage', description: 'Hand the customer back to the front desk.' }],
  },
  { name: 'tech', instructions: 'You fix technical problems.', model: 'tech-model', handoffs: ['triage'] },
];

const handoffCall = (id: string, agent: string, args = '{}') => ({ id, name: `transfer_to_${agent}`, arguments: args });

type Body = { model: string; messages: Message[]; tools?: Array<{ function: { name: string } }> };

function bodies(world: TestWorld): Body[] {
  return world.fake.requests.map((request) => request.body as unknown as Body);
}

const toolNames = (body: Body) => (body.tools ?? []).map((tool) => tool.function.name);
const systemOf = (body: Body) => body.messages[0]!;

function handoffEvents(status: RunStatus): RunEvent[] {
  return status.events.filter((event) => event.event_type === 'agent_handoff');
}

describe('handoffs', () => {
  it('a handoff and back: prompt, tools and model switch at the next call; the transcript goes on', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [invoice],
      agents: agents(),
      fake: {
        script: [
          callTools([handoffCall('call_h1', 'billing', '{"reason": "an invoice question"}')]),
          callTools([{ id: 'call_inv', name: 'invoice', arguments: '{"number": "A-1"}' }]),
          callTools([handoffCall('call_h2', 'triage')]),
          reply('Invoice A-1 is paid. Anything else I can help with?'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'triage', input: 'Is my invoice A-1 paid?' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('Invoice A-1 is paid. Anything else I can help with?');
    world.fake.assertDone();

    const [first, second, third, fourth] = bodies(world);
    // Triage's request: its instructions, its handoff tools, the worker's default model.
    expect(first!.model).toBe('fake-model');
    expect(toolNames(first!)).toEqual(['transfer_to_billing', 'transfer_to_tech']);
    expect(systemOf(first!)).toMatchObject({ role: 'system' });
    expect(systemOf(first!)['content']).toMatch(new RegExp(`^${TRIAGE}$`, 'm'));
    expect(first!.messages.slice(1)).toEqual([{ role: 'user', content: 'Is my invoice A-1 paid?' }]);

    // After the handoff: billing's instructions, tools and model; the conversation so far is kept, with
    // the handoff's result telling the model the transfer happened.
    const transferred = {
      role: 'tool',
      tool_call_id: 'call_h1',
      content: JSON.stringify({ handoff: 'billing', status: 'transferred' }, null, 2),
    };
    for (const body of [second!, third!]) {
      expect(body.model).toBe('billing-model');
      expect(toolNames(body)).toEqual(['invoice', 'transfer_to_triage']);
      expect(systemOf(body)['content']).toMatch(new RegExp(`^${BILLING}$`, 'm'));
      expect(systemOf(body)['content']).not.toMatch(new RegExp(`^${TRIAGE}$`, 'm'));
      expect(body.messages.slice(1, 4)).toEqual([
        { role: 'user', content: 'Is my invoice A-1 paid?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_h1',
              type: 'function',
              function: { name: 'transfer_to_billing', arguments: '{"reason": "an invoice question"}' },
            },
          ],
        },
        transferred,
      ]);
    }
    expect(second!.messages).toHaveLength(4);
    expect(third!.messages.slice(4).map((message) => message['role'])).toEqual(['assistant', 'tool']);

    // And back: triage's prompt, tools and model again, the whole conversation before it kept.
    expect(fourth!.model).toBe('fake-model');
    expect(toolNames(fourth!)).toEqual(['transfer_to_billing', 'transfer_to_tech']);
    expect(systemOf(fourth!)).toEqual(systemOf(first!));
    expect(fourth!.messages.slice(1, third!.messages.length)).toEqual(third!.messages.slice(1));
    expect(fourth!.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_h2',
      content: JSON.stringify({ handoff: 'triage', status: 'transferred' }, null, 2),
    });

    // The durable transcript: one system message, the active agent's instructions; the rest as it went.
    expect(result.transcript[0]).toEqual({ role: 'system', content: TRIAGE });
    expect(result.transcript.filter((message) => message['role'] === 'system')).toHaveLength(1);
    expect(result.transcript.slice(1, -1)).toEqual(fourth!.messages.slice(1));
    validateToolLinkage(result.transcript);

    const status = await run.status();
    expect(status.agent).toBe('triage');
    expect(status.started_agent).toBe('triage');
    expect(handoffEvents(status)).toEqual([
      expect.objectContaining({
        from: 'triage',
        to: 'billing',
        tool_name: 'transfer_to_billing',
        tool_call_id: 'call_h1',
        reason: 'an invoice question',
      }),
      expect.objectContaining({ from: 'billing', to: 'triage', tool_call_id: 'call_h2' }),
    ]);
    expect(handoffEvents(status)[1]).not.toHaveProperty('reason');
    // The switch lands before the next iteration's model call.
    const order = status.events
      .filter((event) => event.event_type === 'agent_handoff' || event.event_type === 'llm_call_start')
      .map((event) => event.event_type);
    expect(order).toEqual([
      'llm_call_start',
      'agent_handoff',
      'llm_call_start',
      'llm_call_start',
      'agent_handoff',
      'llm_call_start',
    ]);
    // The target's spec was resolved by a local activity: recorded (its marker), so replays switch to the same spec.
    const history = await run.workflow.fetchHistory();
    const resolved = (history.events ?? []).filter(
      (event) =>
        event.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
        Buffer.from(event.userMetadata?.summary?.data ?? [])
          .toString()
          .includes('resolve agent'),
    );
    expect(resolved).toHaveLength(3);
    await recordHistory(run, 'handoff-and-back');
  });

  it('two handoffs in one batch: the first wins, the second gets an error result', async ({ startWorld }) => {
    const world = await startWorld({
      tools: [invoice],
      agents: agents(),
      fake: {
        script: [callTools([handoffCall('call_b', 'billing'), handoffCall('call_t', 'tech')]), reply('Billing here.')],
      },
    });
    const run = await world.client.start({ agent: 'triage', input: 'help' });
    const result = await run.result();
    expect(result.answer).toBe('Billing here.');
    const second = bodies(world)[1]!;
    expect(second.model).toBe('billing-model');
    const results = second.messages.filter((message) => message['role'] === 'tool');
    expect(results[0]).toMatchObject({ tool_call_id: 'call_b', content: expect.stringContaining('"transferred"') });
    expect(results[1]!['tool_call_id']).toBe('call_t');
    expect(JSON.parse(results[1]!['content'] as string).error).toContain(
      'only one handoff per batch: transfer_to_billing (call call_b) was carried out first, this one was not',
    );
    const status = await run.status();
    expect(status.agent).toBe('billing');
    expect(handoffEvents(status)).toEqual([expect.objectContaining({ from: 'triage', to: 'billing' })]);
    expect(status.events.find((event) => event.event_type === 'tool_call_error')).toMatchObject({
      tool_name: 'transfer_to_tech',
      tool_call_id: 'call_t',
    });
    world.fake.assertDone();
  });

  it('a gated handoff waits for a person; the switch follows the approval', async ({ startWorld }) => {
    const world = await startWorld({
      tools: [invoice],
      agents: agents({ needs_approval: ['transfer_to_billing'] }),
      fake: { script: [callTools([handoffCall('call_h', 'billing')]), reply('Billing here.')] },
    });
    const run = await world.client.start({ agent: 'triage', input: 'refund please' });
    await awaitingApproval(run, ['call_h']);
    expect((await run.status()).agent).toBe('triage');
    await run.approve('call_h');
    expect((await run.result()).answer).toBe('Billing here.');
    expect(bodies(world)[1]!.model).toBe('billing-model');
    expect((await run.status()).agent).toBe('billing');
    world.fake.assertDone();
  });

  it('the active agent survives continue-as-new: the next run opens with it', async ({ startWorld }) => {
    const world = await startWorld({
      tools: [invoice],
      agents: agents(),
      fake: {
        script: [
          callTools([handoffCall('call_h1', 'billing')]),
          callTools([{ id: 'call_inv', name: 'invoice', arguments: '{"number": "A-1"}' }]),
          reply('It is paid.'),
        ],
      },
    });
    const run = await world.client.start({
      agent: 'triage',
      input: 'Is A-1 paid?',
      // The smallest policy: the run continues as new at each boundary after a step of its own.
      continue_as_new: { max_history_events: 10 },
    });
    const result = await run.result();
    expect(result.answer).toBe('It is paid.');
    const status = await run.status();
    expect((status as unknown as { continued_as_new: number }).continued_as_new).toBeGreaterThanOrEqual(2);
    expect(status.agent).toBe('billing');
    expect(status.started_agent).toBe('triage');
    // The handoff's event travelled with the carried events.
    expect(handoffEvents(status)).toEqual([expect.objectContaining({ from: 'triage', to: 'billing' })]);
    const [, second, third] = bodies(world);
    for (const body of [second!, third!]) {
      expect(body.model).toBe('billing-model');
      expect(toolNames(body)).toEqual(['invoice', 'transfer_to_triage']);
      expect(systemOf(body)['content']).toMatch(new RegExp(`^${BILLING}$`, 'm'));
    }
    expect(result.transcript[0]).toEqual({ role: 'system', content: BILLING });
    expect(result.transcript.map((message) => message['role'])).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    world.fake.assertDone();
    // The first run of the chain: it resolved billing, switched, and continued as new carrying it.
    await recordHistory(
      run,
      'handoff-continues-as-new',
      (run.workflow as { firstExecutionRunId?: string }).firstExecutionRunId,
    );
  });

  it('a session hands off too, and the next turn is answered by the active agent', async ({ startWorld }) => {
    const world = await startWorld({
      tools: [invoice],
      agents: agents(),
      fake: {
        script: [callTools([handoffCall('call_h', 'billing')]), reply('Billing here.'), reply('Due on the 5th.')],
      },
    });
    const session = await world.client.startSession({ agent: 'triage' });
    expect(await session.send('a billing question')).toEqual({ status: 'completed', reply: 'Billing here.', turn: 1 });
    expect(await session.send('when is it due?')).toEqual({ status: 'completed', reply: 'Due on the 5th.', turn: 2 });
    const [first, second, third] = bodies(world);
    expect([first!.model, second!.model, third!.model]).toEqual(['fake-model', 'billing-model', 'billing-model']);
    expect(systemOf(third!)['content']).toMatch(new RegExp(`^${BILLING}$`, 'm'));
    expect(third!.messages.slice(1, second!.messages.length)).toEqual(second!.messages.slice(1));
    const status = await session.status();
    expect([status.agent, status.started_agent]).toEqual(['billing', 'triage']);
    await session.close();
    const result = await session.sessionResult();
    expect(result.transcript[0]).toEqual({ role: 'system', content: BILLING });
    world.fake.assertDone();
  });
});
