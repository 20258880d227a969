import { WorkflowUpdateFailedError } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { validateToolLinkage, type Message } from '../../src/context';
import type { Responder } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import { nextRequestQuery } from '../../src/common/definitions';
import { NO_BOUNDS, SESSION_SCHEMA_VERSION } from '../../src/runtime';
import { repositoryRoot } from '../../support/repository';
import { callsFinished, eventually, recordCarriedState, recordHistory, replyReceived } from '../support/wait';

/** Answers each request with a reply derived from the last user message: deterministic across sessions. */
const echo: Responder = (body) => {
  const last = [...body.messages].reverse().find((message) => message['role'] === 'user');
  const text = String(last?.['content'] ?? '');
  return { kind: 'reply', content: `echo ${text.length}:${text.slice(0, 12)}` };
};

describe('chatSession', () => {
  it('answers each send with its reply, in order, keeping the whole conversation', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' }]),
          reply('three'),
          reply('hello back'),
        ],
      },
    });
    const session = await world.client.startSession({ agent: 'assistant' });
    const first = await session.send('what is 1 + 2?');
    expect(first).toEqual({ status: 'completed', reply: 'three', turn: 1 });
    const second = await session.send('hello');
    expect(second).toEqual({ status: 'completed', reply: 'hello back', turn: 2 });
    const transcript = await session.transcript();
    expect(transcript.map((m) => m['role'])).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(world.fake.requests[2]!.body.messages.slice(1)).toEqual(transcript.slice(1, 6));
    await session.close();
    const result = await session.sessionResult();
    expect(result.turns).toBe(2);
    world.fake.assertDone();
    await recordHistory(session, 'session-basic');
  });

  it('queues messages that arrive during a turn and answers them in order', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [reply(['slow ', 'one'], { chunkDelayMs: 300 }), reply('two'), reply('three')] },
    });
    const session = await world.client.startSession({ agent: 'assistant' });
    const first$ = session.send('one');
    await world.fake.waitForRequests(1);
    const second$ = session.send('two');
    await eventually(async () => ((await session.status()).queued_user_messages === 1 ? true : undefined));
    await session.post('three');
    const [first, second] = await Promise.all([first$, second$]);
    expect([first.reply, second.reply]).toEqual(['slow one', 'two']);
    await eventually(async () =>
      (await session.status()).events.filter((e) => e.event_type === 'react_end').length === 3 ? true : undefined,
    );
    expect((await session.transcript()).filter((m) => m['role'] === 'user').map((m) => m['content'])).toEqual([
      'one',
      'two',
      'three',
    ]);
    world.fake.assertDone();
  });

  it('abort ends the current turn only; the session goes on', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [{ kind: 'hang', chunks: ['partial '] }, reply('fresh answer')] },
    });
    const session = await world.client.startSession({ agent: 'assistant' });
    const pending = session.send('long question');
    await world.fake.waitForRequests(1);
    await replyReceived(session, 'partial '.length);
    await session.abort('changed my mind');
    expect(await pending).toEqual({ status: 'aborted', reply: null, turn: 1, abort_reason: 'changed my mind' });
    expect(await session.send('short question')).toEqual({ status: 'completed', reply: 'fresh answer', turn: 2 });
    const transcript = await session.transcript();
    expect(transcript.slice(1)).toEqual([
      { role: 'user', content: 'long question' },
      { role: 'assistant', content: 'partial <Truncated due to cancel from user. Reason: changed my mind>' },
      { role: 'user', content: 'short question' },
      { role: 'assistant', content: 'fresh answer' },
    ]);
    await session.abort('nothing running');
    expect((await session.status()).state).toBe('running');
    await session.close();
    expect((await session.sessionResult()).turns).toBe(2);
    world.fake.assertDone();
    await recordHistory(session, 'session-abort');
  });

  it('the update validator rejects bad input before anything is recorded', async ({ startWorld }) => {
    const world = await startWorld();
    const session = await world.client.startSession({ agent: 'assistant' });
    await eventually(async () => ((await session.status()).events.length > 0 ? true : undefined));
    const before = (await session.workflow.fetchHistory()).events!.length;
    const error = await session.workflow.executeUpdate('send', { args: [{ content: 42 }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((error as WorkflowUpdateFailedError).cause?.message)).toContain('send expects {"content": string}');
    const events = (await session.workflow.fetchHistory()).events!;
    expect(events.some((event) => String(event.eventType).includes('UPDATE'))).toBe(false);
    expect(events.length).toBe(before);
    expect(world.fake.requests).toHaveLength(0);
  });

  it('continues as new with the context state itself: the compiled request is byte-identical across the boundary', async ({
    startWorld,
  }) => {
    const messages = ['first question', 'second one', 'third', 'fourth message here', 'fifth', 'sixth and last'];
    const bodies: string[][] = [];
    for (const maxEvents of [1_000_000, 25]) {
      const world = await startWorld({ fake: { responder: echo } });
      const session = await world.client.startSession({
        agent: 'assistant',
        continue_as_new: { max_history_events: maxEvents },
      });
      let boundaries = 0;
      for (const message of messages) {
        const runBefore = (await session.workflow.describe()).runId;
        await session.send(message);
        const runAfter = (await session.workflow.describe()).runId;
        if (runAfter === runBefore) continue;
        boundaries += 1;
        // The old run, queried after it closed, and the new run compile the very same request.
        const before = await world.client.temporal.workflow
          .getHandle(session.workflowId, runBefore)
          .query(nextRequestQuery);
        const after = await session.nextRequest();
        expect(after).toBe(before);
        expect(JSON.parse(after).messages.at(-1)).toEqual({
          role: 'assistant',
          content: `echo ${message.length}:${message.slice(0, 12)}`,
        });
      }
      const status = await session.status();
      expect(status['continued_as_new' as keyof typeof status]).toBe(boundaries);
      if (maxEvents === 25) expect(boundaries).toBeGreaterThanOrEqual(2);
      else expect(boundaries).toBe(0);
      if (maxEvents === 25) await recordCarriedState(session, `chat-session-v${SESSION_SCHEMA_VERSION}`);
      bodies.push(world.fake.requests.map((request) => JSON.stringify(request.body)));
      await world.close();
    }
    // Every request the model received is byte-identical to the one a session that never continued sent.
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[0]).toHaveLength(messages.length);
  });

  it('a message queued by signal survives continue-as-new and is answered by the next run', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [reply(['slow ', 'turn'], { chunkDelayMs: 400 }), reply('queued answered')] },
    });
    const session = await world.client.startSession({
      agent: 'assistant',
      continue_as_new: { max_history_events: 10 },
    });
    const runBefore = (await session.workflow.describe()).runId;
    const first = session.send('first');
    await world.fake.waitForRequests(1);
    await session.post('queued during the turn');
    expect((await first).reply).toBe('slow turn');
    await eventually(async () => ((await session.transcript()).length === 5 ? true : undefined));
    expect((await session.workflow.describe()).runId).not.toBe(runBefore);
    expect((await session.transcript()).slice(1)).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'slow turn' },
      { role: 'user', content: 'queued during the turn' },
      { role: 'assistant', content: 'queued answered' },
    ]);
    world.fake.assertDone();
  });

  it('a SelfRef memory made just before the session continues as new survives it', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [{ name: 'memo', instructions: 'You remember things.', tools: ['wait'], selfref: true }],
      fake: {
        script: [
          callTools([
            { id: 'r1', name: 'selfref_remember', arguments: '{"text": "User prefers metric units"}' },
            { id: 'w1', name: 'wait', arguments: '{"seconds": 60}' },
          ]),
          reply('you prefer metric units'),
        ],
      },
    });
    const session = await world.client.startSession({ agent: 'memo', continue_as_new: { max_history_events: 10 } });
    const runBefore = (await session.workflow.describe()).runId;
    const first = session.send('remember my units, then wait');
    // The memory is made (its call finished); the turn is aborted before any compile folds it in, so
    // it is still queued when the session continues as new after the turn.
    await callsFinished(session, 1);
    await session.abort('enough waiting');
    expect((await first).status).toBe('aborted');
    await eventually(async () => ((await session.workflow.describe()).runId !== runBefore ? true : undefined));
    expect(await session.send('what do I prefer?')).toEqual({
      status: 'completed',
      reply: 'you prefer metric units',
      turn: 2,
    });
    const system = String(world.fake.requests[1]!.body.messages[0]!['content']);
    expect(system).toContain('User prefers metric units');
    // The event window travelled too: the first run's story is still told.
    const events = (await session.status()).events.map((event) => event.event_type);
    expect(events).toEqual(
      expect.arrayContaining(['react_start', 'user_message_received', 'tool_calls_batch_end', 'continued_as_new']),
    );
    world.fake.assertDone();
    await recordHistory(session, 'session-memory-continues', runBefore);
  });

  it('a session carried by an earlier build (state version 1) goes on: its transcript, its turns, then the next turn', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { responder: echo } });
    const fixture = JSON.parse(
      readFileSync(join(repositoryRoot, 'test', 'fixtures', 'carried-state', 'chat-session-v1.json'), 'utf8'),
    ) as { state: { transcript: Message[]; event_seq: number } };
    const handle = await world.client.temporal.workflow.start('chatSession', {
      taskQueue: world.config.taskQueue,
      workflowId: `session-v1-${Date.now()}`,
      args: [fixture],
    });
    const session = world.client.session(handle.workflowId);
    expect(await session.send('sixth and last')).toEqual({
      status: 'completed',
      reply: 'echo 14:sixth and la',
      turn: 6,
    });
    expect(await session.transcript()).toEqual([
      ...fixture.state.transcript,
      { role: 'user', content: 'sixth and last' },
      { role: 'assistant', content: 'echo 14:sixth and la' },
    ]);
    // Version 1 carried no events: those of the earlier runs count as dropped, and the log goes on.
    const status = await session.status();
    expect(status.events_dropped).toBe(fixture.state.event_seq);
    expect(status.events[0]!.seq).toBe(fixture.state.event_seq + 1);
    expect(world.fake.requests[0]!.body.messages).toHaveLength(fixture.state.transcript.length + 1);
  });

  it('a close that arrives during a turn ends the session after it, even at a continue-as-new boundary', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { script: [reply(['slow ', 'answer'], { chunkDelayMs: 300 })] } });
    const session = await world.client.startSession({
      agent: 'assistant',
      continue_as_new: { max_history_events: 10 },
    });
    const runBefore = (await session.workflow.describe()).runId;
    const turn = session.send('first');
    await world.fake.waitForRequests(1);
    await session.close();
    expect((await turn).reply).toBe('slow answer');
    expect((await session.sessionResult()).turns).toBe(1);
    expect((await session.workflow.describe()).runId).toBe(runBefore);
    world.fake.assertDone();
  });

  it(
    'runs 300 turns of 4 KB messages, continuing as new several times, and keeps the full context',
    { timeout: 600_000 },
    async ({ startWorld }) => {
      const world = await startWorld({ fake: { responder: echo } });
      const session = await world.client.startSession({
        agent: 'assistant',
        continue_as_new: { max_history_events: 400 },
        // 300 calls and about 45 million tokens: past the default bounds of a session's budget.
        budget: NO_BOUNDS,
      });
      const block = 'x'.repeat(4096);
      for (let turn = 1; turn <= 300; turn += 1) {
        const answer = await session.send(`turn ${turn} ${block}`);
        expect(answer.turn).toBe(turn);
      }
      const status = await session.status();
      expect(status['continued_as_new' as keyof typeof status]).toBeGreaterThanOrEqual(3);
      const transcript = await session.transcript();
      expect(transcript).toHaveLength(601);
      validateToolLinkage(transcript);
      const lastRequest = world.fake.requests.at(-1)!.body.messages;
      expect(lastRequest).toHaveLength(600);
      expect(lastRequest.filter((m) => m['role'] === 'user').map((m) => String(m['content']).split(' ')[1])).toEqual(
        Array.from({ length: 300 }, (_, i) => String(i + 1)),
      );
      console.log(
        `300-turn session: continued as new ${String(status['continued_as_new' as keyof typeof status])} times, history now ${status.history.events} events / ${status.history.bytes} bytes`,
      );
    },
  );
});
