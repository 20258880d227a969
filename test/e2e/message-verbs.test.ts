import { describe, expect } from 'vitest';
import { callTools, reply } from '../../src/fake-model/steps';
import { runCli } from '../support/cli';
import { it } from '../support/fixtures';
import type { TestWorld } from '../support/temporal';
import { awaitingApproval } from '../support/wait';

/**
 * One verb per action (docs/client.md): `post` queues a message without waiting, `submit` waits until
 * the run accepted it, `send` waits for a session's reply. The deprecated names (client and CLI) still
 * do what they did, beside the names that replace them.
 */
function cli(world: TestWorld, args: string[]) {
  return runCli(args, {
    TEMPORAL_ADDRESS: world.config.temporalAddress,
    PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
  });
}

describe('one verb per action', () => {
  it('post and submit queue messages on a run, from the client and the CLI; the old names still work', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'gated', instructions: 'Add.', tools: ['add'], needs_approval: ['add'] }],
      fake: { script: [callTools([{ id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' }]), reply('done')] },
    });
    const run = await world.client.start({ agent: 'gated', input: 'add 1 and 2' });
    // The run waits for a decision: every message below queues until it goes on.
    await awaitingApproval(run, ['c1']);
    await run.post('one');
    await run.sendUserMessage('two');
    expect(await run.submit('three')).toEqual({ accepted: true, queued: 3, message_id: 3 });
    expect(await run.submitUserMessage('four')).toEqual({ accepted: true, queued: 4, message_id: 4 });
    const posted = await cli(world, ['post', run.workflowId, 'five']);
    expect([posted.code, JSON.parse(posted.stdout), posted.stderr]).toEqual([
      0,
      { workflow_id: run.workflowId, signal: 'user_message' },
      '',
    ]);
    const sent = await cli(world, ['send', run.workflowId, 'six']);
    expect([sent.code, JSON.parse(sent.stdout), sent.stderr]).toEqual([
      0,
      { workflow_id: run.workflowId, signal: 'user_message' },
      '',
    ]);
    await run.approve('c1');
    const result = await run.result();
    expect(result.answer).toBe('done');
    expect(world.fake.requests[1]!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'add 1 and 2' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a": 1, "b": 2}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '3' },
      ...['one', 'two', 'three', 'four', 'five', 'six'].map((content) => ({ role: 'user', content })),
    ]);
    world.fake.assertDone();
  });

  it('a session takes posted messages as turns and answers send with the reply; send --no-wait still posts', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { script: [reply('one'), reply('two'), reply('three'), reply('four')] } });
    const session = await world.client.startSession({ agent: 'assistant' });
    const id = session.workflowId;
    const posted = await cli(world, ['post', id, 'first']);
    expect([posted.code, JSON.parse(posted.stdout)]).toEqual([0, { workflow_id: id, signal: 'user_message' }]);
    const queued = await cli(world, ['send', id, 'second', '--no-wait']);
    expect([queued.code, JSON.parse(queued.stdout)]).toEqual([0, { workflow_id: id, signal: 'user_message' }]);
    await session.post('third');
    const sent = await cli(world, ['send', id, 'fourth']);
    expect([sent.code, JSON.parse(sent.stdout)]).toEqual([
      0,
      { workflow_id: id, status: 'completed', reply: 'four', turn: 4 },
    ]);
    const transcript = await session.transcript();
    expect(transcript.slice(1)).toEqual(
      ['first', 'second', 'third', 'fourth'].flatMap((content, turn) => [
        { role: 'user', content },
        { role: 'assistant', content: ['one', 'two', 'three', 'four'][turn] },
      ]),
    );
    const help = await cli(world, ['--help']);
    expect(help.stdout).toContain('\n  post <id> <text...>\n  send <id> <text...>\n');
    world.fake.assertDone();
  });
});
