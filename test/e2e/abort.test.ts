import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { z } from 'zod';
import { callTools } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';
import type { RunHandle } from '../../src/client/patchloop-client';
import { HEARTBEAT_EVERY_MS, HEARTBEAT_FIRST_MS } from '../../src/runtime';
import { callsFinished, eventOf, recordHistory, replyReceived } from '../support/wait';

type HistoryEvent = NonNullable<Awaited<ReturnType<RunHandle['workflow']['fetchHistory']>>['events']>[number];

/** A history event's time, in ms since the epoch. */
function eventMs(event: HistoryEvent | undefined): number {
  const time = event?.eventTime;
  if (!time) throw new Error('no such event in the history');
  return Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

/** Resolves at this time (ms since the epoch): the abort's moment relative to a heartbeat's period. */
function untilTime(at: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
}

describe('abort signal', () => {
  it('while streaming: keeps the partial text with the truncation marker, closes the stream, ends within ~2 s', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [{ kind: 'hang', chunks: ['Transformers ', 'are '], chunkDelayMs: 50 }] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'explain transformers' });
    await world.fake.waitForRequests(1);
    await replyReceived(run, 'Transformers are '.length);
    // Workflow code runs without stack traces (workflows/stack-traces.ts): the SDK's call stack has no frames.
    expect(await run.workflow.query<string>('__stack_trace')).not.toMatch(/\bat /);
    const abortedAt = Date.now();
    await run.abort('user_interrupt');
    const result = await run.result();
    const latency = Date.now() - abortedAt;
    expect(result.status).toBe('aborted');
    expect(result.answer).toBeNull();
    expect(result.abort_reason).toBe('user_interrupt');
    expect(result.transcript.at(-1)).toEqual({
      role: 'assistant',
      content: 'Transformers are <Truncated due to cancel from user. Reason: user_interrupt>',
    });
    validateToolLinkage(result.transcript);
    expect(latency).toBeLessThan(3000);
    // The provider stream was really closed, not left to run.
    expect(world.fake.requests[0]!.abandonedAt).toBeGreaterThanOrEqual(abortedAt);
    console.log(`abort while streaming: run ended ${latency} ms after the signal`);
    const end = (await run.status()).events.at(-1)!;
    expect(end).toMatchObject({
      event_type: 'react_end',
      status: 'aborted',
      aborted: true,
      abort_reason: 'user_interrupt',
    });
    world.fake.assertDone();
    await recordHistory(run, 'abort-while-streaming');
  });

  it("reaches the model call at once on its worker, not at the call's next timed heartbeat (the abort nudge)", async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { script: [{ kind: 'hang', chunks: ['Once '], chunkDelayMs: 10 }] } });
    const run = await world.client.start({ agent: 'assistant', input: 'tell a story' });
    await replyReceived(run, 'Once '.length);
    // The call heartbeats at HEARTBEAT_FIRST_MS, then every HEARTBEAT_EVERY_MS, and only a heartbeat's
    // answer tells it of a cancel. The abort goes a quarter second after one of its timed heartbeats, so
    // the next is three quarters of a second away: the call must learn of the cancel before it.
    const scheduled = (await run.workflow.fetchHistory()).events!.findLast(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'llmPhase',
    );
    const started = eventMs(scheduled);
    const tick = (beat: number) => started + HEARTBEAT_FIRST_MS + beat * HEARTBEAT_EVERY_MS;
    let beat = 0;
    while (tick(beat) + 250 < Date.now() + 50) beat += 1;
    const abortAt = tick(beat) + 250;
    await untilTime(abortAt);
    await run.abort('now');
    expect((await run.result()).status).toBe('aborted');
    const completed = eventMs(
      (await run.workflow.fetchHistory()).events!.find(
        (event) =>
          String(event.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled!.eventId),
      ),
    );
    const nextTimedHeartbeat = tick(beat + 1);
    console.log(`abort nudge: the call ended ${completed - abortAt} ms after the abort`);
    expect(completed).toBeLessThan(nextTimedHeartbeat);
  });

  it('during a parallel batch: the finished call keeps its result, the running one is cancelled, the transcript is valid', async ({
    startWorld,
  }) => {
    const stoppedAt: number[] = [];
    const probe = defineTool({
      name: 'wait',
      description: 'waits until aborted',
      parameters: z.object({ seconds: z.number() }),
      execute: ({ seconds }, { signal }) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(() => resolve(`waited ${seconds} s`), seconds * 1000);
          signal.addEventListener('abort', () => {
            stoppedAt.push(Date.now());
            clearTimeout(timer);
            reject(new Error('stopped'));
          });
        }),
    });
    const world = await startWorld({
      tools: [addTool, probe],
      agents: [{ name: 'assistant', instructions: 'test', tools: ['add', 'wait'] }],
      fake: {
        script: [
          callTools([
            { id: 'call_add', name: 'add', arguments: '{"a": 2, "b": 3}' },
            { id: 'call_wait', name: 'wait', arguments: '{"seconds": 60}' },
          ]),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'add and wait' });
    await eventOf(run, 'tool_call_start');
    await callsFinished(run, 1);
    const abortedAt = Date.now();
    await run.abort('operator');
    const result = await run.result();
    const latency = Date.now() - abortedAt;
    expect(result.status).toBe('aborted');
    expect(result.transcript.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_add', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } },
          { id: 'call_wait', type: 'function', function: { name: 'wait', arguments: '{"seconds": 60}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_add', content: '5' },
      {
        role: 'tool',
        tool_call_id: 'call_wait',
        content: '<Tool execution cancelled by user. Tool: wait. Reason: operator>',
      },
    ]);
    validateToolLinkage(result.transcript);
    expect(latency).toBeLessThan(3000);
    // The running tool was really stopped through its signal.
    expect(stoppedAt).toHaveLength(1);
    expect(stoppedAt[0]).toBeGreaterThanOrEqual(abortedAt);
    console.log(
      `abort during a batch: run ended ${latency} ms after the signal, tool stopped after ${stoppedAt[0]! - abortedAt} ms`,
    );
    const batchEnd = (await run.status()).events.find((event) => event.event_type === 'tool_calls_batch_end');
    expect(batchEnd).toMatchObject({ batch_size: 2, success_count: 1, cancelled: ['call_wait'] });
    world.fake.assertDone();
    await recordHistory(run, 'abort-during-batch');
  });

  it('between phases: no further call is made and the bare marker is committed', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'c1', name: 'wait', arguments: '{"seconds": 0.5}' }])] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'wait' });
    await eventOf(run, 'tool_call_start');
    // The abort lands while the batch runs; the first reason wins, later empty ones do not clear it.
    await run.abort('first');
    await run.abort('');
    await run.abort('second');
    const result = await run.result();
    expect(result.abort_reason).toBe('first');
    validateToolLinkage(result.transcript);
    expect(world.fake.requests).toHaveLength(1);
  });

  it('an abort after the end changes nothing', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'add', arguments: '{"a": 1, "b": 1}' }]),
          { kind: 'reply', content: 'two' },
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: '1+1' });
    const result = await run.result();
    await run.abort('too late').catch(() => undefined);
    expect(result.status).toBe('completed');
    expect((await run.status()).state).toBe('completed');
  });
});
