import type { temporal } from '@temporalio/proto';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { callTools, reply } from '../../src/fake-model/steps';
import type { RunHandle } from '../../src/client/patchloop-client';
import { countBillableActions } from '../../src/client/billable-actions';
import { repeatTool } from '../../src/tools/examples';
import { eventually } from '../support/wait';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Three single-call batches of `repeat`, then an answer. */
const threeIterations = [
  callTools([{ id: 'r1', name: 'repeat', arguments: '{"text": "ab", "times": 2}' }]),
  callTools([{ id: 'r2', name: 'repeat', arguments: '{"text": "cd", "times": 2}' }]),
  callTools([{ id: 'r3', name: 'repeat', arguments: '{"text": "ef", "times": 2}' }]),
  reply('done'),
];

async function historyEvents(run: RunHandle): Promise<HistoryEvent[]> {
  return (await run.workflow.fetchHistory()).events ?? [];
}

function markerSummaries(events: HistoryEvent[]): string[] {
  return events
    .filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity')
    .map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString()) as string);
}

describe('model calls as local activities (`llm_local_activity`)', () => {
  it('the same requests and transcript as activities, no activity dispatched, fewer workflow tasks and actions', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [repeatTool],
      agents: [
        { name: 'remote', instructions: 'You repeat.', tools: ['repeat'] },
        { name: 'local', instructions: 'You repeat.', tools: ['repeat'], limits: { llm_local_activity: true } },
      ],
      fake: { script: [...threeIterations, ...threeIterations] },
    });
    const remote = await world.client.start({ agent: 'remote', input: 'repeat three times' });
    const remoteResult = await remote.result();
    const local = await world.client.start({ agent: 'local', input: 'repeat three times' });
    const localResult = await local.result();
    expect(localResult.status).toBe('completed');
    // The model received the very same bodies, call by call.
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    expect(bodies).toHaveLength(8);
    expect(bodies.slice(4)).toEqual(bodies.slice(0, 4));
    expect(localResult.transcript).toEqual(remoteResult.transcript);

    const remoteEvents = await historyEvents(remote);
    const localEvents = await historyEvents(local);
    const scheduled = localEvents.filter((event) => event.activityTaskScheduledEventAttributes);
    expect(scheduled).toEqual([]);
    expect(markerSummaries(localEvents)).toEqual([
      'resolve agent local',
      'llm call 1',
      'llm call 2',
      'llm call 3',
      'llm call 4',
    ]);
    const tasks = (events: HistoryEvent[]) =>
      events.filter((event) => event.workflowTaskCompletedEventAttributes).length;
    const remoteActions = countBillableActions(remoteEvents);
    const localActions = countBillableActions(localEvents);
    console.log(
      `3 iterations: workflow tasks ${tasks(localEvents)} local / ${tasks(remoteEvents)} activities; billable actions ${localActions.total} / ${remoteActions.total}; history ${localEvents.length} / ${remoteEvents.length} events`,
    );
    // The whole run is one workflow task: each call's local activity ends within it, the next starts.
    expect(tasks(localEvents)).toBe(1);
    expect(tasks(remoteEvents)).toBe(5);
    // Its start, the one workflow task with local activities, its last state.
    expect(localActions).toMatchObject({ total: 3, workflow_starts: 1, local_activity_tasks: 1, activities: 0 });
    expect(remoteActions.total - remoteActions.heartbeats_estimated).toBe(7);
    world.fake.assertDone();
  });

  it('an abort sent while a local model call runs waits for the call, and its reply is lost: the unsafe case the docs name', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'local', instructions: 'You talk.', limits: { llm_local_activity: true } }],
      fake: {
        script: [reply(['one ', 'two ', 'three ', 'four ', 'five ', 'six'], { chunkDelayMs: 300 })],
      },
    });
    const run = await world.client.start({ agent: 'local', input: 'count slowly' });
    await eventually(() => (world.fake.requests.length === 1 ? true : undefined), 30_000, 'the model call to start');
    const abortSent = Date.now();
    await run.abort('user_interrupt');
    const result = await run.result();
    console.log(`local model call: abort to result ${Date.now() - abortSent} ms; status ${result.status}`);
    expect(result.status).toBe('aborted');
    // The workflow task that ran the call could not complete with the abort waiting behind it: the call's
    // result never reached history, and the run ended with an empty truncated reply, as if the call had
    // been cancelled before its first token (an activity's call hands back the text it had).
    expect(result.transcript.slice(2)).toEqual([
      { role: 'assistant', content: '<Truncated due to cancel from user. Reason: user_interrupt>' },
    ]);
    expect(world.fake.requests).toHaveLength(1);
    // The run closed only after the call had ended (1.8 s of chunks from its start).
    expect(Date.now() - abortSent).toBeGreaterThan(1000);
  });
});
