import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { RunFailedError } from '../../src/client/patchloop-client';
import { callTools, failWith, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { exampleTools } from '../../src/tools/examples';
import { eventOf, eventually, recordHistory } from '../support/wait';

describe('no accepted user message is ever lost', () => {
  it('a message that arrives during the tool budget’s last call gets an iteration of its own', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 1, "b": 2}' }]),
          // The budget's last call (no tools, not streamed), slow enough for the message to arrive.
          reply('I cannot use tools any more.', { firstChunkDelayMs: 1200 }),
          reply('Here is your second answer.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'add 1 and 2', max_tool_calls: 0 });
    await world.fake.waitForRequests(2);
    await run.sendUserMessage('and one more question');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('Here is your second answer.');
    expect(result.unprocessed_messages).toBeUndefined();
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'add 1 and 2' },
      { role: 'assistant', content: 'I cannot use tools any more.' },
      { role: 'user', content: 'and one more question' },
      { role: 'assistant', content: 'Here is your second answer.' },
    ]);
    const [, last, third] = world.fake.requests.map((request) => request.body);
    expect(last!.tools).toBeUndefined();
    expect(last!.stream).toBe(false);
    expect(third!.messages.slice(1)).toEqual(result.transcript.slice(1, 4));
    world.fake.assertDone();
    await recordHistory(run, 'budget-last-call-message');
  });

  it('a message accepted just before an abort, with no compile boundary between, is reported as unprocessed', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'call_1', name: 'wait', arguments: '{"seconds": 5}' }])] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'wait' });
    await eventOf(run, 'tool_call_start');
    await run.sendUserMessage('please also check the logs');
    await eventOf(run, 'user_message_received');
    await run.abort('operator');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.unprocessed_messages).toEqual([{ content: 'please also check the logs' }]);
    expect(JSON.stringify(result.transcript)).not.toContain('please also check the logs');
    world.fake.assertDone();
    await recordHistory(run, 'abort-unprocessed-message');
  });

  it('a failed run carries the messages it accepted but never showed the model', async ({ startWorld }) => {
    const world = await startWorld({ fake: { script: [failWith(400, { message: 'content filter', delayMs: 1500 })] } });
    const run = await world.client.start({ agent: 'assistant', input: 'hi' });
    await world.fake.waitForRequests(1);
    await run.sendUserMessage('are you there?');
    await eventOf(run, 'user_message_received');
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('ProviderRejected');
    expect(error.unprocessedMessages).toEqual([{ content: 'are you there?' }]);
    world.fake.assertDone();
  });
});

describe('signals and updates validate their input', () => {
  it('refuses bad and oversized user_message signals with a visible event; the run goes on unharmed', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'call_1', name: 'wait', arguments: '{"seconds": 1.5}' }]), reply('done')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'wait' });
    await eventOf(run, 'tool_call_start');
    const megabyte = 'x'.repeat(1024 * 1024);
    for (const payload of [{}, { content: 5 }, 'just text', { content: megabyte }, { content: megabyte }])
      await run.workflow.signal('user_message', payload);
    await run.abort(42 as unknown as string);
    const result = await run.result();
    const status = await run.status();
    const rejected = status.events
      .filter((event) => event.event_type === 'input_rejected')
      .map((event) => (event.event_type === 'input_rejected' ? [event.input, event.via, event.reason] : []));
    expect(rejected).toEqual([
      ['user_message', 'signal', 'expected {"content": string}, got content of type undefined'],
      ['user_message', 'signal', 'expected {"content": string}, got content of type number'],
      ['user_message', 'signal', 'expected {"content": string}'],
      ['user_message', 'signal', 'content is 1048576 bytes; the limit is 262144 (max_user_message_bytes)'],
      ['user_message', 'signal', 'content is 1048576 bytes; the limit is 262144 (max_user_message_bytes)'],
      ['abort', 'signal', 'reason must be a string, got number: aborting without a reason'],
    ]);
    expect(status.rejected_inputs).toBe(6);
    // The malformed abort still aborts (an abort must never be lost), without a reason.
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('');
    expect(JSON.stringify(result.transcript)).not.toContain('xxxx');
    expect((await run.historySize()).bytes).toBeLessThan(2.5 * 1024 * 1024);
  });

  it('offers user_message as an update: accepted messages are confirmed, bad ones refused before anything is recorded', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'call_1', name: 'wait', arguments: '{"seconds": 2}' }]), reply('noted')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'wait' });
    await eventOf(run, 'tool_call_start');
    expect(await run.submitUserMessage('first')).toEqual({ accepted: true, queued: 1, message_id: 1 });
    const refusals: string[] = [];
    for (const payload of [{ content: '' }, { content: 7 }, { content: 'y'.repeat(300 * 1024) }]) {
      const error = await run.workflow.executeUpdate('user_message', { args: [payload] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
      refusals.push(((error as WorkflowUpdateFailedError).cause as Error).message);
    }
    expect(refusals).toEqual([
      'content is empty',
      'expected {"content": string}, got content of type number',
      'content is 307200 bytes; the limit is 262144 (max_user_message_bytes)',
    ]);
    const result = await run.result();
    expect(result.transcript.at(-2)).toEqual({ role: 'user', content: 'first' });
    const history = JSON.stringify(await run.workflow.fetchHistory());
    // Rejected updates leave nothing in history; the accepted one is recorded once.
    expect(history.split('WORKFLOW_EXECUTION_UPDATE_ACCEPTED').length - 1).toBe(1);
    expect(history).not.toContain('yyyy');
    // The run is over: a late message is refused, not silently dropped.
    await expect(run.submitUserMessage('too late')).rejects.toThrow();
    await recordHistory(run, 'user-message-update');
  });

  it('keeps the queue bounded: past max_queued_message_bytes, messages are refused until the run catches up', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'call_1', name: 'wait', arguments: '{"seconds": 1.5}' }]), reply('ok')] },
      agents: [
        {
          name: 'small',
          instructions: 'Wait.',
          tools: ['wait'],
          limits: { max_user_message_bytes: 100, max_queued_message_bytes: 150 },
        },
      ],
    });
    const run = await world.client.start({ agent: 'small', input: 'wait' });
    await eventOf(run, 'tool_call_start');
    await run.submitUserMessage('a'.repeat(100));
    await expect(run.submitUserMessage('b'.repeat(60))).rejects.toThrow(WorkflowUpdateFailedError);
    await run.submitUserMessage('c'.repeat(50));
    const result = await run.result();
    expect(
      result.transcript.filter((message) => message['role'] === 'user').map((message) => String(message['content'])[0]),
    ).toEqual(['w', 'a', 'c']);
  });
});

describe('idempotency keys', () => {
  it('are unique per run chain: a new run reusing the workflow id and the provider’s call ids gets new keys', async ({
    startWorld,
  }) => {
    const keys: string[] = [];
    const recordKey = defineTool({
      name: 'record_key',
      description: 'Records its idempotency key.',
      parameters: z.object({}),
      execute: (_args, { idempotencyKey }) => void keys.push(idempotencyKey),
    });
    const world = await startWorld({
      tools: [...exampleTools, recordKey],
      agents: [{ name: 'keys', instructions: 'Record.', tools: ['record_key'] }],
      fake: {
        script: [
          callTools([{ id: 'call_0', name: 'record_key', arguments: '{}' }]),
          reply('one'),
          callTools([{ id: 'call_0', name: 'record_key', arguments: '{}' }]),
          reply('two'),
        ],
      },
    });
    const first = await world.client.start({ agent: 'keys', input: 'go' }, { workflowId: 'reused-id' });
    await first.result();
    const firstRun = (await first.workflow.describe()).runId;
    const second = await world.client.start({ agent: 'keys', input: 'go' }, { workflowId: 'reused-id' });
    await second.result();
    const secondRun = (await second.workflow.describe()).runId;
    expect(keys).toEqual([`reused-id/${firstRun}/1/call_0`, `reused-id/${secondRun}/1/call_0`]);
    world.fake.assertDone();
  });
});

describe('sessions survive a bad turn', () => {
  it('a turn the provider rejects answers failed, keeps its message, and the session goes on', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          reply('hello!'),
          failWith(400, { message: 'Your message was flagged by the content filter' }),
          // Too long: the run compacts (one summary call, which this provider refuses too), then gives up typed.
          failWith(400, { code: 'context_length_exceeded', message: 'maximum context length exceeded' }),
          failWith(400, { code: 'context_length_exceeded', message: 'maximum context length exceeded' }),
          reply('still here'),
        ],
      },
    });
    const session = await world.client.startSession({ agent: 'assistant' });
    expect(await session.send('hi')).toEqual({ status: 'completed', reply: 'hello!', turn: 1 });
    expect(await session.send('something flagged')).toEqual({
      status: 'failed',
      reply: null,
      turn: 2,
      error: { type: 'ProviderRejected', message: expect.stringContaining('content filter') },
    });
    const tooLong = await session.send('a very long paste');
    expect([tooLong.status, tooLong.error?.type]).toEqual(['failed', 'ContextTooLong']);
    expect(await session.send('are you there?')).toEqual({ status: 'completed', reply: 'still here', turn: 4 });
    expect(world.fake.requests[3]!.body.tools).toBeUndefined();
    // The failed turns' messages stay, each after the context as it was before its turn: the next
    // request is the conversation as it was said, and valid.
    expect(world.fake.requests[4]!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello!' },
      { role: 'user', content: 'something flagged' },
      { role: 'user', content: 'a very long paste' },
      { role: 'user', content: 'are you there?' },
    ]);
    expect(await session.transcript()).toEqual([
      expect.objectContaining({ role: 'system' }),
      ...world.fake.requests[4]!.body.messages.slice(1),
      { role: 'assistant', content: 'still here' },
    ]);
    const status = await session.status();
    expect(status.state).toBe('running');
    expect(status.last_turn_failure).toBeNull();
    expect(
      status.events
        .filter((event) => event.event_type === 'turn_failed')
        .map((event) => (event.event_type === 'turn_failed' ? event.error_type : '')),
    ).toEqual(['ProviderRejected', 'ContextTooLong']);
    await session.close();
    await eventually(async () => ((await session.sessionResult()).turns === 4 ? true : undefined));
    world.fake.assertDone();
    await recordHistory(session, 'session-failed-turn-keeps-message');
  });
});
