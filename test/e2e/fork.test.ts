import { describe, expect } from 'vitest';
import { z } from 'zod';
import { it } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { RunFailedError } from '../../src/client/patchloop-client';

/** A side-effecting tool that counts its executions. */
function chargeTool(executions: string[]) {
  return defineTool({
    name: 'charge',
    description: 'Charges a card.',
    parameters: z.object({ cents: z.number() }),
    execute: ({ cents }) => {
      executions.push(`charge ${cents}`);
      return `charged ${cents}`;
    },
  });
}

const charge = (index: number) =>
  callTools([{ id: `call_${index}`, name: 'charge', arguments: JSON.stringify({ cents: 100 + index }) }]);

describe('fork', () => {
  it("a fork's first request is the original's request at that iteration, byte for byte, and no tool runs again", async ({
    startWorld,
  }) => {
    const executions: string[] = [];
    const world = await startWorld({
      tools: [chargeTool(executions)],
      agents: [{ name: 'payer', instructions: 'Pay the bills.', tools: ['charge'] }],
      fake: { script: [charge(0), charge(1), charge(2), reply('paid three'), reply('paid, differently')] },
    });
    const original = await world.client.start({ agent: 'payer', input: 'pay them' }, { workflowId: 'fork-original' });
    const result = await original.result();
    expect(result.answer).toBe('paid three');
    expect(executions).toEqual(['charge 100', 'charge 101', 'charge 102']);
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    expect(bodies).toHaveLength(4);

    const fork = await world.client.fork('fork-original', { at: 2, workflowId: 'fork-at-2' });
    const forked = await fork.result();
    expect(forked.status).toBe('completed');
    expect(forked.answer).toBe('paid, differently');
    // The model received the original's third request again, exactly.
    expect(JSON.stringify(world.fake.requests[4]!.body)).toBe(bodies[2]);
    expect(executions).toHaveLength(3);
    // The fork's transcript: the original's up to iteration 2's request, then its own answer.
    expect(forked.transcript.slice(0, -1)).toEqual(result.transcript.slice(0, forked.transcript.length - 1));
    expect(forked.transcript.at(-1)).toMatchObject({ role: 'assistant', content: 'paid, differently' });
    validateToolLinkage(forked.transcript);
    const status = await fork.status();
    expect(status.llm_calls).toBe(1);
    expect(status.events.find((event) => event.event_type === 'custom_event')).toMatchObject({
      event_name: 'forked',
      data: { workflow_id: 'fork-original', at: 2, overrides: [] },
    });
    world.fake.assertDone();
  });

  it('an iteration with no model request fails the fork clearly', async ({ startWorld }) => {
    const world = await startWorld({ fake: { script: [reply('hello')] } });
    const original = await world.client.start({ agent: 'assistant', input: 'hi' }, { workflowId: 'fork-short' });
    await original.result();
    const fork = await world.client.fork('fork-short', { at: 5 });
    const error = await fork.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('ForkUnavailable');
    expect((error as RunFailedError).message).toContain('made no model request at iteration 5');
    expect((error as RunFailedError).message).toContain('at iterations 0');
  });
});
