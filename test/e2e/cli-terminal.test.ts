import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { callTools, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { type TestWorld } from '../support/temporal';
import { runCli } from '../support/cli';
import { eventually } from '../support/wait';
import { onTerminal as terminalWith } from '../support/terminal';

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const transfers: number[] = [];
const transfer = defineTool({
  name: 'transfer',
  description: 'Sends money.',
  parameters: z.object({ amount: z.number() }),
  execute: ({ amount }) => {
    transfers.push(amount);
    return `sent ${amount}`;
  },
});
const agents = [{ name: 'payer', instructions: 'You pay.', tools: ['transfer'], needs_approval: ['transfer'] }];
const payCall = (id: string, amount: number) =>
  callTools([{ id, name: 'transfer', arguments: `{"amount": ${amount}}` }]);

const onTerminal = (world: TestWorld, args: string[]) => {
  const terminal = terminalWith(args, env(world));
  children.push(terminal.child);
  return terminal;
};

function env(world: TestWorld): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TEMPORAL_ADDRESS: world.config.temporalAddress,
    PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
  };
}

function cli(world: TestWorld, args: string[]) {
  return runCli(args, {
    TEMPORAL_ADDRESS: world.config.temporalAddress,
    PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
  });
}

describe('approvals from the CLI', () => {
  it('run --follow on a terminal asks y/n with the arguments shown, and the answer decides the call', async ({
    startWorld,
  }) => {
    transfers.length = 0;
    const world = await startWorld({
      tools: [transfer],
      agents,
      fake: { script: [payCall('call_1', 42), reply('Paid 42.')] },
    });
    const terminal = onTerminal(world, ['run', 'payer', 'pay 42', '--id', 'cli-approve-1', '--follow']);
    await terminal.answer('approve transfer {"amount":42}? [y/n]', 'y');
    expect(await terminal.exited).toBe(0);
    expect(terminal.screen()).toContain('? transfer {"amount":42} waits for approval (call call_1)');
    expect(terminal.screen()).toContain('approved call_1');
    expect(terminal.screen()).toContain('answer: Paid 42.');
    expect(transfers).toEqual([42]);
  });

  it('chat on a terminal: n asks for the reason, which the model receives', async ({ startWorld }) => {
    transfers.length = 0;
    const world = await startWorld({
      tools: [transfer],
      agents,
      fake: { script: [payCall('call_9', 900), reply('Not paid.')] },
    });
    const terminal = onTerminal(world, ['chat', 'payer', '--id', 'cli-approve-chat']);
    await terminal.answer('you> ', 'pay 900');
    await terminal.answer('approve transfer {"amount":900}? [y/n]', 'n');
    await terminal.answer('reason (the model sees it):', 'too much');
    await terminal.answer('assistant> Not paid.', '/quit');
    expect(await terminal.exited).toBe(0);
    expect(transfers).toEqual([]);
    expect(world.fake.requests[1]!.body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_9',
      content: '<Tool call rejected by the approver. Tool: transfer. Reason: too much>',
    });
  });

  it('approvals, approve and reject work by id without a terminal', async ({ startWorld }) => {
    transfers.length = 0;
    const world = await startWorld({
      tools: [transfer],
      agents,
      fake: {
        script: [
          callTools([
            { id: 'a', name: 'transfer', arguments: '{"amount": 1}' },
            { id: 'b', name: 'transfer', arguments: '{"amount": 2}' },
          ]),
          reply('ok'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'payer', input: 'pay twice' }, { workflowId: 'cli-approve-ids' });
    const listed = await eventually(async () => {
      const out = await cli(world, ['approvals', run.workflowId]);
      const parsed = JSON.parse(out.stdout) as { pending_approvals: Array<{ tool_call_id: string }> };
      return parsed.pending_approvals.length === 2 ? parsed : undefined;
    });
    expect(listed.pending_approvals.map((entry) => entry.tool_call_id)).toEqual(['a', 'b']);
    const noReason = await cli(world, ['reject', run.workflowId, 'b']);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason is required');
    expect(JSON.parse((await cli(world, ['approve', run.workflowId, 'a'])).stdout)).toEqual({
      workflow_id: run.workflowId,
      tool_call_id: 'a',
      approved: true,
    });
    const bogus = await cli(world, ['approve', run.workflowId, 'zzz']);
    expect(bogus.code).toBe(1);
    expect(bogus.stderr).toBe("error: no tool call 'zzz' awaits approval (waiting: b)\n");
    expect(
      JSON.parse((await cli(world, ['reject', run.workflowId, 'b', '--reason', 'once is enough'])).stdout),
    ).toMatchObject({ approved: false });
    expect((await run.result()).status).toBe('completed');
    expect(transfers).toEqual([1]);
  });
});

describe('the demo at a terminal', () => {
  it('runs offline, stays up until Ctrl-C, and one Ctrl-C stops it cleanly', async () => {
    const { OPENAI_API_KEY: _key, OPENAI_BASE_URL: _url, ...rest } = process.env;
    const terminal = terminalWith(['demo'], rest);
    children.push(terminal.child);
    await terminal.interrupt('Server, worker and UI stay up until Ctrl-C');
    const code = await terminal.exited;
    const screen = terminal.screen();
    expect(code, screen).toBe(0);
    expect(screen).toContain('using the built-in offline fake model');
    expect(screen).toContain('approved repeat (call ');
    expect(screen).toContain('npx patchloop run assistant add 4 and 5 --follow');
    // The console, with the address and task queue of the demo's own server and worker.
    expect(screen).toMatch(
      /\r\npatchloop's console shows these runs \(transcripts, approvals, live tokens\) at http:\/\/127\.0\.0\.1:8300:\r\n {2}TEMPORAL_ADDRESS=127\.0\.0\.1:\d+ PATCHLOOP_TASK_QUEUE=patchloop-demo npx patchloop console\r\n/,
    );
    expect(screen).toContain('stopping the demo');
    expect(screen).not.toMatch(/IllegalStateError|DRAINING|\n\s+at /);
  });
});
