import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect } from 'vitest';
import { z } from 'zod';
import { it } from '../support/fixtures';
import type { AgentDefinitionInput } from '../../src/runtime';
import { callTools, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { runCli } from '../support/cli';
import { workflowBundle } from '../support/temporal';
import { eventually } from '../support/wait';

const banker: AgentDefinitionInput = {
  name: 'banker',
  instructions: 'Move money when asked.',
  tools: ['transfer'],
  policy: [
    { tool: 'transfer', principal: 'bob', decision: 'deny', reason: 'bob may not move money' },
    { tool: 'transfer', args: { cents: { gt: 100000 } }, decision: 'approve', reason: 'large transfers' },
    { tool: 'trans*', decision: 'allow' },
  ],
};

const transfer = (id: string, cents: number) =>
  callTools([{ id, name: 'transfer', arguments: JSON.stringify({ cents }) }]);

describe('tool policy', () => {
  it('denies a tool for one principal and allows it for another; a rule gates a call for a person; the same on replay', async ({
    startWorld,
  }) => {
    const executions: string[] = [];
    const world = await startWorld({
      agents: [banker],
      tools: [
        defineTool({
          name: 'transfer',
          description: 'Moves money.',
          parameters: z.object({ cents: z.number() }),
          execute: ({ cents }) => {
            executions.push(`transfer ${cents}`);
            return `moved ${cents}`;
          },
        }),
      ],
      fake: {
        script: [
          transfer('t1', 500),
          reply('could not move it'),
          transfer('t2', 500),
          reply('moved it'),
          transfer('t3', 200000),
          reply('moved the large sum'),
        ],
      },
    });
    const bob = await world.client.start({ agent: 'banker', input: 'move 5 dollars' }, { principal: 'bob' });
    const bobResult = await bob.result();
    expect(bobResult.answer).toBe('could not move it');
    // Never executed; the model read why.
    expect(executions).toEqual([]);
    const denied = world.fake.requests[1]!.body.messages.at(-1);
    expect(denied).toEqual({
      role: 'tool',
      tool_call_id: 't1',
      content: '<Tool call denied by the tool policy. Tool: transfer. Reason: bob may not move money>',
    });
    const events = (await bob.allEvents()).events;
    expect(events.find((event) => event.event_type === 'custom_event')).toMatchObject({
      event_name: 'tool_denied',
      tool_name: 'transfer',
      tool_call_id: 't1',
      data: { reason: 'bob may not move money', rule: 1 },
    });
    expect(events.some((event) => event.event_type === 'approval_requested')).toBe(false);
    expect(events.some((event) => event.event_type === 'tool_call_start')).toBe(false);

    const alice = await world.client.start({ agent: 'banker', input: 'move 5 dollars' }, { principal: 'alice' });
    expect((await alice.result()).answer).toBe('moved it');
    expect(executions).toEqual(['transfer 500']);

    // Over the limit: a person decides, whoever the principal (bob's own rule comes first for bob).
    const large = await world.client.start({ agent: 'banker', input: 'move 2000 dollars' }, { principal: 'alice' });
    const pending = await eventually(async () => {
      const waiting = await large.pendingApprovals();
      return waiting.length > 0 ? waiting : undefined;
    });
    expect(pending).toMatchObject([{ tool_call_id: 't3', tool_name: 'transfer', arguments: { cents: 200000 } }]);
    expect(executions).toEqual(['transfer 500']);
    await large.approve('t3', 'checked');
    expect((await large.result()).answer).toBe('moved the large sum');
    expect(executions).toEqual(['transfer 500', 'transfer 200000']);

    // The recorded histories replay with the same verdicts (a different one would be nondeterminism).
    for (const run of [bob, alice, large])
      await Worker.runReplayHistory(
        { workflowBundle: await workflowBundle() },
        await run.workflow.fetchHistory(),
        run.workflowId,
      );
    world.fake.assertDone();
  });

  it('patchloop policy check prints the decision and the rule that made it', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-policy-'));
    const file = join(folder, 'agents.json');
    writeFileSync(file, JSON.stringify([{ ...banker, tools: [] }]));
    const check = (...args: string[]) =>
      runCli(['policy', 'check', 'banker', 'transfer', ...args, '--agents', file], {});
    const bob = await check('{"cents": 5}', '--principal', 'bob');
    expect([bob.code, bob.stdout.trim()]).toEqual([
      0,
      'deny: rule 1 {"tool":"transfer","principal":"bob","decision":"deny","reason":"bob may not move money"}: bob may not move money',
    ]);
    const large = await check('{"cents": 200000}', '--principal', 'alice', '--json');
    expect(JSON.parse(large.stdout)).toEqual({
      decision: 'approve',
      reason: 'large transfers',
      source: { rule: 1 },
      rule: 'rule 2 {"tool":"transfer","args":{"cents":{"gt":100000}},"decision":"approve","reason":"large transfers"}',
    });
    const small = await check('{"cents": 5}');
    expect(small.stdout.trim()).toBe('allow: rule 3 {"tool":"trans*","decision":"allow"}');
    const bad = await check('cents=5');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('ARGS must be a JSON object')]);
  });
});
