import { describe, expect } from 'vitest';
import { z } from 'zod';
import { it, type StartWorld } from '../support/fixtures';
import type { AgentDefinitionInput } from '../../src/runtime';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply, toolCall, type FakeStep } from '../../src/fake-model/steps';
import { runCli } from '../support/cli';
import { eventually, startedChild } from '../support/wait';
import { defineTool } from '../../src/tools/define-tool';
import { RunFailedError } from '../../src/client/patchloop-client';
import { testConsole } from '../support/console';

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

const payer: AgentDefinitionInput = { name: 'payer', instructions: 'Pay the bills.', tools: ['charge'] };

/** A world whose agents (the payer by default) have the counting charge tool, and its fake model's script. */
async function payingWorld(startWorld: StartWorld, script: FakeStep[], agents: AgentDefinitionInput[] = [payer]) {
  const executions: string[] = [];
  const world = await startWorld({ tools: [chargeTool(executions)], agents, fake: { script } });
  return { world, executions };
}

describe('fork', () => {
  it("a fork's first request is the original's request at that iteration, byte for byte, and no tool runs again", async ({
    startWorld,
  }) => {
    const { world, executions } = await payingWorld(startWorld, [
      charge(0),
      charge(1),
      charge(2),
      reply('paid three'),
      reply('paid, differently'),
    ]);
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

  it("a fork keeps the original's own overrides: a run started with a budget forks with that budget", async ({
    startWorld,
  }) => {
    const { world, executions } = await payingWorld(startWorld, [charge(0), charge(1)]);
    const original = await world.client.start(
      { agent: 'payer', input: 'pay', budget: { max_llm_calls: 1 } },
      { workflowId: 'fork-budget' },
    );
    expect((await original.result()).status).toBe('budget_exhausted');
    const fork = await world.client.fork('fork-budget', { at: 0 });
    // One model call, as the original's budget allows: a second would find the script done and fail.
    const forked = await fork.result();
    expect(forked.status).toBe('budget_exhausted');
    expect(forked.budget?.limit).toMatchObject({ max_llm_calls: 1 });
    expect(JSON.stringify(world.fake.requests[1]!.body)).toBe(JSON.stringify(world.fake.requests[0]!.body));
    expect(executions).toEqual(['charge 100', 'charge 101']);
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

  it('across continue-as-new: a fork at an iteration of a later run of the chain is that request exactly', async ({
    startWorld,
  }) => {
    const { world, executions } = await payingWorld(startWorld, [
      ...Array.from({ length: 12 }, (_, index) => charge(index)),
      reply('paid all'),
      reply('forked late'),
    ]);
    const original = await world.client.start(
      { agent: 'payer', input: 'pay them all', continue_as_new: { max_history_events: 40 } },
      { workflowId: 'fork-chain' },
    );
    await original.result();
    const runs = [];
    for await (const run of world.client.temporal.workflow.list({ query: `WorkflowId = 'fork-chain'` })) runs.push(run);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    const fork = await world.client.fork('fork-chain', { at: 10 });
    expect((await fork.result()).answer).toBe('forked late');
    expect(JSON.stringify(world.fake.requests[13]!.body)).toBe(bodies[10]);
    expect(executions).toHaveLength(12);
    world.fake.assertDone();
  });

  it("a sub-agent's run forks as a run of its own, from its own context", async ({ startWorld }) => {
    const { world, executions } = await payingWorld(
      startWorld,
      [
        callTools([toolCall('s1', 'clerk', { input: 'pay the rent' })]),
        charge(0),
        reply('rent paid'),
        reply('the clerk paid the rent'),
        reply('rent paid again, differently'),
      ],
      [
        { name: 'manager', instructions: 'You manage.', subagents: ['clerk'] },
        { name: 'clerk', instructions: 'You pay.', tools: ['charge'] },
      ],
    );
    const run = await world.client.start({ agent: 'manager', input: 'get the rent paid' });
    expect((await run.result()).answer).toBe('the clerk paid the rent');
    const child = await startedChild(run, 's1');
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    const fork = await world.client.fork(child, { at: 1 });
    const forked = await fork.result();
    expect(forked.answer).toBe('rent paid again, differently');
    // A run of its own: its whole transcript, not a child's omitted one.
    expect(forked.transcript_omitted).toBeUndefined();
    expect(forked.transcript[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You pay.') });
    expect(JSON.stringify(world.fake.requests[4]!.body)).toBe(bodies[2]);
    expect(executions).toEqual(['charge 100']);
  });

  it('overrides change only what they name: the model, the instructions (a patch), a message; the CLI forks and show links both ways', async ({
    startWorld,
  }) => {
    const { world, executions } = await payingWorld(
      startWorld,
      [charge(0), reply('paid'), reply('by model'), reply('by instructions'), reply('by agent'), reply('cli')],
      [payer, { name: 'auditor', instructions: 'Audit the payments.', tools: ['charge'] }],
    );
    await (await world.client.start({ agent: 'payer', input: 'pay' }, { workflowId: 'fork-overrides' })).result();
    const original = JSON.parse(JSON.stringify(world.fake.requests[1]!.body)) as {
      model: string;
      messages: Array<Record<string, unknown>>;
    };
    const bodyOf = async (options: Parameters<typeof world.client.fork>[1], index: number) => {
      await (await world.client.fork('fork-overrides', options)).result();
      return world.fake.requests[index]!.body as typeof original;
    };
    expect(await bodyOf({ at: 1, model: 'other-model' }, 2)).toEqual({ ...original, model: 'other-model' });
    const instructed = await bodyOf({ at: 1, instructions: 'Pay only small bills.', message: 'and the gas' }, 3);
    expect(instructed.messages).toEqual([
      { ...original.messages[0], content: expect.stringContaining('Pay only small bills.') },
      ...original.messages.slice(1),
      { role: 'user', content: 'and the gas' },
    ]);
    expect(JSON.stringify(instructed.messages[0])).not.toContain('Pay the bills.');
    const audited = await bodyOf({ at: 1, agent: 'auditor' }, 4);
    expect(audited.messages[0]!['content']).toContain('Audit the payments.');
    expect(audited.messages.slice(1)).toEqual(original.messages.slice(1));

    const env = {
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
    };
    const forked = await runCli(['fork', 'fork-overrides', '--at', '1', '--id', 'fork-by-cli', '--json'], env);
    expect(forked.stderr).toBe('');
    expect(JSON.parse(forked.stdout)).toEqual({
      workflow_id: 'fork-by-cli',
      forked_from: { workflow_id: 'fork-overrides', at: 1 },
    });
    expect((await world.client.run('fork-by-cli').result()).answer).toBe('cli');
    expect(JSON.stringify(world.fake.requests[5]!.body)).toBe(JSON.stringify(original));
    const shown = await runCli(['show', 'fork-by-cli'], env);
    expect(shown.stdout).toContain('forked from fork-overrides (patchloop show fork-overrides');
    expect(shown.stdout).toContain('at iteration 1');
    await eventually(async () => {
      const listed = await runCli(['show', 'fork-overrides', '--json'], env);
      const forks = (JSON.parse(listed.stdout) as { forks?: Array<{ workflow_id: string; at: number }> }).forks ?? [];
      expect(forks.map((fork) => [fork.workflow_id, fork.at])).toContainEqual(['fork-by-cli', 1]);
      expect(forks).toHaveLength(4);
      return true;
    });
    const refused = await runCli(['fork', 'fork-overrides', '--at', 'two'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--at must be an iteration');
    expect(executions).toEqual(['charge 100']);
    world.fake.assertDone();
  });

  it('rewind: the fork goes on from the iteration, the running original is aborted with a reason that names it', async ({
    startWorld,
  }) => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const executions: string[] = [];
    const slow = defineTool({
      name: 'slow_charge',
      description: 'Charges, slowly.',
      parameters: z.object({ cents: z.number() }),
      execute: async ({ cents }, { signal }) => {
        executions.push(`slow ${cents}`);
        await Promise.race([held, new Promise((resolve) => signal.addEventListener('abort', resolve))]);
        return `charged ${cents}`;
      },
    });
    const world = await startWorld({
      tools: [chargeTool(executions), slow],
      agents: [{ name: 'payer', instructions: 'Pay the bills.', tools: ['charge', 'slow_charge'] }],
      fake: {
        script: [
          charge(0),
          callTools([{ id: 'slow_1', name: 'slow_charge', arguments: '{"cents": 500}' }]),
          reply('rewound answer'),
        ],
      },
    });
    const original = await world.client.start({ agent: 'payer', input: 'pay' }, { workflowId: 'rewind-original' });
    await eventually(() => expect(executions).toEqual(['charge 100', 'slow 500']));
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    // A rewind to an iteration the run never reached: the fork fails, the original goes on.
    await expect(world.client.rewind('rewind-original', { at: 9, workflowId: 'rewind-bad' })).rejects.toThrow(
      /made no model request at iteration 9/,
    );
    expect((await original.workflow.describe()).status.name).toBe('RUNNING');
    await eventually(async () =>
      (await world.client.listRuns({ idPrefix: 'rewind-bad' }))[0]?.status === 'failed' ? true : undefined,
    );
    const { fork, aborted } = await world.client.rewind('rewind-original', { at: 1, workflowId: 'rewind-fork' });
    expect(aborted).toBe(true);
    const ended = await original.result();
    expect(ended.status).toBe('aborted');
    expect(ended.abort_reason).toBe('rewound to iteration 1: it goes on as rewind-fork');
    validateToolLinkage(ended.transcript);
    expect((await fork.result()).answer).toBe('rewound answer');
    expect(JSON.stringify(world.fake.requests[2]!.body)).toBe(bodies[1]);
    release();
    expect(executions).toEqual(['charge 100', 'slow 500']);
  });

  it('the console: "fork from here" on each model call starts a fork; the pages link both ways', async ({
    startWorld,
  }) => {
    const { world } = await payingWorld(startWorld, [charge(0), reply('paid'), reply('paid from the console')]);
    await (await world.client.start({ agent: 'payer', input: 'pay' }, { workflowId: 'fork-console' })).result();
    const token = 'fork-console-token-0123456789abcdef';
    const logged: string[] = [];
    const console = await testConsole(world.client, token, (line) => logged.push(line));
    try {
      const page = async (id: string) => (await fetch(`${console.url}/runs/${id}`)).text();
      // A closed run's timeline and children come with its details (each read replays its history).
      const details = async (id: string) =>
        (await (await fetch(`${console.url}/runs/${id}/details`)).json()) as Record<string, string>;
      const { timeline } = await details('fork-console');
      expect([timeline, logged]).toEqual([
        expect.stringContaining('<button type="button" class="fork" data-fork-at="0"'),
        [],
      ]);
      expect(timeline).toContain('data-fork-at="1"');
      const post = (body: unknown) =>
        fetch(`${console.url}/api/runs/fork-console/fork`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
      const refused = await post({ at: 'one' });
      expect(refused.status).toBe(400);
      const started = await post({ at: 1 });
      expect(started.status).toBe(200);
      const { workflow_id: forkId } = (await started.json()) as { workflow_id: string };
      expect((await world.client.run(forkId).result()).answer).toBe('paid from the console');
      expect(JSON.stringify(world.fake.requests[2]!.body)).toBe(JSON.stringify(world.fake.requests[1]!.body));
      expect(await page(forkId)).toContain('Forked from <a href="/runs/fork-console">fork-console</a> at iteration 1');
      await eventually(async () => {
        const listed = (await details('fork-console'))['children']!;
        return listed.includes(
          `<h2>Forks</h2><ul class="forks"><li><a href="/runs/${forkId}">${forkId}</a> at iteration 1`,
        )
          ? true
          : undefined;
      });
    } finally {
      await console.close();
    }
  });
});
