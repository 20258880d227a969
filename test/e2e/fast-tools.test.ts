import { setTimeout as sleep } from 'node:timers/promises';
import type { temporal } from '@temporalio/proto';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import type { RunHandle } from '../../src/client/patchloop-client';
import { defineTool } from '../../src/tools/define-tool';
import { repeatTool, waitTool } from '../../src/tools/examples';
import { eventually } from '../support/wait';
import { countBillableActions } from '../../src/client/billable-actions';
import { sideEffectWorld } from '../support/side-effect-world';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `repeat` as an ordinary tool: the same work, one activity task of its own per batch. */
const slowRepeat = defineTool({
  name: 'repeat_slow',
  description: repeatTool.descriptor.description,
  parameters: z.object({ text: z.string(), times: z.number().int() }),
  execute: ({ text, times }) => text.repeat(times),
});

/** Three single-call batches of `tool`, then an answer. */
const threeIterations = (tool: string) => [
  callTools([{ id: 'r1', name: tool, arguments: '{"text": "ab", "times": 2}' }]),
  callTools([{ id: 'r2', name: tool, arguments: '{"text": "cd", "times": 2}' }]),
  callTools([{ id: 'r3', name: tool, arguments: '{"text": "ef", "times": 2}' }]),
  reply('done'),
];

async function historyEvents(run: RunHandle): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  return (await run.workflow.fetchHistory()).events ?? [];
}

function scheduledActivities(events: temporal.api.history.v1.IHistoryEvent[]): string[] {
  return events.flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}

function completedWorkflowTasks(events: temporal.api.history.v1.IHistoryEvent[]): number {
  return events.filter((event) => event.workflowTaskCompletedEventAttributes).length;
}

describe('fast tools: the model call runs them with its reply', () => {
  it('one workflow task and one activity per iteration instead of two of each, one billable action less; the model sees the same requests', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [repeatTool, slowRepeat],
      agents: [
        { name: 'quick', instructions: 'You repeat.', tools: ['repeat'] },
        { name: 'plain', instructions: 'You repeat.', tools: ['repeat_slow'] },
      ],
      fake: { script: [...threeIterations('repeat'), ...threeIterations('repeat_slow')] },
    });
    const quick = await world.client.start({ agent: 'quick', input: 'repeat three times' });
    const quickResult = await quick.result();
    const plain = await world.client.start({ agent: 'plain', input: 'repeat three times' });
    const plainResult = await plain.result();
    expect(quickResult.status).toBe('completed');
    expect(plainResult.status).toBe('completed');

    const toolMessages = (messages: Array<Record<string, unknown>>) =>
      messages.filter((message) => message['role'] === 'tool');
    const expected = [
      { role: 'tool', tool_call_id: 'r1', content: '"abab"' },
      { role: 'tool', tool_call_id: 'r2', content: '"cdcd"' },
      { role: 'tool', tool_call_id: 'r3', content: '"efef"' },
    ];
    const requests = world.fake.requests;
    expect(requests).toHaveLength(8);
    // What the model received after each batch is the same on both paths, call by call.
    for (const offset of [0, 4])
      for (const step of [1, 2, 3])
        expect(toolMessages(requests[offset + step]!.body.messages)).toEqual(expected.slice(0, step));
    expect(toolMessages(quickResult.transcript)).toEqual(expected);

    const quickEvents = await historyEvents(quick);
    const plainEvents = await historyEvents(plain);
    expect(scheduledActivities(quickEvents).filter((name) => name === 'toolBatch')).toEqual([]);
    expect(scheduledActivities(plainEvents).filter((name) => name === 'toolBatch')).toHaveLength(3);
    expect(scheduledActivities(quickEvents)).toEqual(['llmPhase', 'llmPhase', 'llmPhase', 'llmPhase']);
    // The batches ran in the model calls' activities: no local activity but the agent's resolution.
    const markers = quickEvents.filter(
      (event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    expect(markers.map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString()))).toEqual([
      'resolve agent quick',
    ]);
    // Billed: each iteration one action (its model call) where an ordinary tool costs two.
    const quickActions = countBillableActions(quickEvents);
    const plainActions = countBillableActions(plainEvents);
    console.log(
      `billable actions for 3 iterations: fast tools ${quickActions.total}, ordinary tools ${plainActions.total}`,
    );
    expect(quickActions.local_activity_tasks).toBe(1);
    expect(quickActions.activities).toBe(4);
    expect(plainActions.activities).toBe(7);
    // Heartbeats are estimated from each call's time, which a loaded machine stretches: left out.
    expect(quickActions.total - quickActions.heartbeats_estimated).toBe(
      plainActions.total - plainActions.heartbeats_estimated - 3,
    );
    const quickTasks = completedWorkflowTasks(quickEvents);
    const plainTasks = completedWorkflowTasks(plainEvents);
    console.log(`workflow tasks for 3 iterations: fast tools ${quickTasks}, ordinary tools ${plainTasks}`);
    expect(quickTasks).toBe(plainTasks - 3);
    world.fake.assertDone();
  });

  it('a batch that mixes fast and ordinary tools runs as one ordinary activity', async ({ startWorld }) => {
    const world = await startWorld({
      tools: [repeatTool, waitTool],
      agents: [{ name: 'mixed', instructions: 'You repeat and wait.', tools: ['repeat', 'wait'] }],
      fake: {
        script: [
          callTools([
            { id: 'r', name: 'repeat', arguments: '{"text": "x", "times": 3}' },
            { id: 'w', name: 'wait', arguments: '{"seconds": 0}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mixed', input: 'repeat and wait' });
    const result = await run.result();
    expect(result.transcript.filter((message) => message['role'] === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'r', content: '"xxx"' },
      { role: 'tool', tool_call_id: 'w', content: '"waited 0 s"' },
    ]);
    const events = await historyEvents(run);
    expect(scheduledActivities(events).filter((name) => name === 'toolBatch')).toHaveLength(1);
    // The one local activity is the agent's resolution: the batch left no marker.
    const markers = events.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    expect(markers.map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString()))).toEqual([
      'resolve agent mixed',
    ]);
    world.fake.assertDone();
  });

  it('an abort that arrives while the fast tools run: the call is cancelled as any batch call is, no model call follows', async ({
    startWorld,
  }) => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const pause = defineTool({
      name: 'pause',
      description: 'Takes a moment.',
      parameters: z.object({}),
      fast: true,
      execute: async () => {
        started();
        await sleep(1500);
        return 'paused';
      },
    });
    const world = await startWorld({
      tools: [pause],
      agents: [{ name: 'pauser', instructions: 'You pause.', tools: ['pause'] }],
      fake: {
        script: [callTools([{ id: 'p', name: 'pause', arguments: '{}' }])],
      },
    });
    const run = await world.client.start({ agent: 'pauser', input: 'pause' });
    await running;
    await run.abort('user_interrupt');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('user_interrupt');
    // The abort reached the model call's activity while the tool ran: after the grace the call ends with
    // its cancellation (it ignored its signal, so it may have taken effect), and the run ends there.
    expect(result.transcript.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'p', type: 'function', function: { name: 'pause', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'p',
        content:
          "<Tool execution cancelled by user. Tool: pause. Reason: user_interrupt. Tool 'pause' was still running when the run was aborted (it did not stop when told to), and the tool is not marked idempotent: it may or may not have taken effect. Check before calling it again.>",
      },
    ]);
    validateToolLinkage(result.transcript);
    expect(world.fake.requests).toHaveLength(1);
    const events = await historyEvents(run);
    expect(scheduledActivities(events).filter((name) => name === 'llmPhase')).toHaveLength(1);
    world.fake.assertDone();
  });
});

describe('fast tools: crash survival', () => {
  it('kill -9 while the fast tools run: a new worker takes the reply from the heartbeat and runs the call again with the same key', async () => {
    const { effects, fake, client, start } = await sideEffectWorld(
      [callTools([{ id: 'n', name: 'note', arguments: '{"label": "a", "ms": 3000}' }]), reply('noted')],
      () => ({ name: 'noter', instructions: 'You take notes.', tools: ['note'] }),
      cleanups,
    );
    const first = await start('first');
    const run = await client.start({ agent: 'noter', input: 'take a note' });
    await eventually(
      () => (effects.effects.some((effect) => effect.worker === 'first') ? true : undefined),
      30_000,
      'the first worker to start the note',
    );
    // The reply goes out in the model call's first heartbeat while its tools run (after 250 ms).
    await eventually(
      async () => {
        const { raw } = await run.workflow.describe();
        return (raw.pendingActivities ?? []).some(
          (activity) => activity.activityType?.name === 'llmPhase' && activity.lastHeartbeatTime,
        )
          ? true
          : undefined;
      },
      30_000,
      'the model call to heartbeat its reply',
    );
    await first.kill('SIGKILL');
    await start('second');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.transcript.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'n', type: 'function', function: { name: 'note', arguments: '{"label": "a", "ms": 3000}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'n', content: '"noted a"' },
      { role: 'assistant', content: 'noted' },
    ]);
    // At least once: the call in flight at the kill ran again, with the same idempotency key.
    const phases = effects.effects.map((effect) => `${effect.worker}:${effect.phase}`);
    expect(phases).toEqual(['first:start', 'second:start', 'second:end']);
    expect(new Set(effects.effects.map((effect) => effect.key)).size).toBe(1);
    // The model was asked once for the reply that called the note: the retry took it from the heartbeat.
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'n', content: '"noted a"' });
    fake.assertDone();
  });
});
