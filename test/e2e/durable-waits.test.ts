import { describe, expect } from 'vitest';
import { temporal } from '@temporalio/proto';
import { it } from '../support/fixtures';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { EventRefusedError, type RunHandle } from '../../src/client/patchloop-client';
import type { Message } from '../../src/context';
import type { AgentDefinitionInput, RunStatus } from '../../src/runtime';
import { temporalAddress, temporalCli, type TestWorld } from '../support/temporal';
import { runCli } from '../support/cli';
import { curl } from '../support/http-api';
import { eventOf, eventually, recordHistory } from '../support/wait';

const WAITER: AgentDefinitionInput = {
  name: 'waiter',
  instructions: 'You wait for things.',
  waits: { max_seconds: 86_400, events: ['build', 'deploy'] },
};

/** The transcript after the system message. */
async function conversation(run: RunHandle): Promise<Message[]> {
  return (await run.transcript()).slice(1);
}

/** Waits until the run reports a durable wait in progress, and answers its status then. */
function waiting(run: RunHandle): Promise<RunStatus> {
  return eventually(async () => {
    const status = await run.status();
    return status.state === 'waiting' && status.waiting?.length ? status : undefined;
  });
}

/** The tool result the model read for this call, parsed. */
function resultOf(messages: readonly Message[], callId: string): Record<string, unknown> {
  const message = messages.find((entry) => entry.role === 'tool' && entry['tool_call_id'] === callId);
  if (!message) throw new Error(`no result for ${callId}`);
  return JSON.parse(message['content'] as string) as Record<string, unknown>;
}

/** When Temporal fired the run's timers (server time, ms). */
async function timersFired(run: RunHandle): Promise<number[]> {
  const history = await run.workflow.fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_FIRED)
    .map((event) => Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6));
}

function bodies(world: TestWorld): Array<{ messages: Message[]; tools?: Array<{ function: { name: string } }> }> {
  return world.fake.requests.map((request) => request.body as never);
}

describe('sleep', () => {
  it('waits on a timer with no activity: waiting with wake_at in status and list, then wakes on time', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: {
        script: [
          callTools([toolCall('call_s', 'sleep', { seconds: 3, reason: 'the deploy needs a moment' })]),
          reply('Done waiting.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Wait three seconds.' });
    const status = await waiting(run);
    expect(status.waiting).toEqual([
      {
        tool_call_id: 'call_s',
        tool: 'sleep',
        wake_at: status.wake_at,
        reason: 'the deploy needs a moment',
      },
    ]);
    // No activity in flight while it waits: the server holds a timer, nothing else.
    const description = await run.workflow.describe();
    expect(description.raw.pendingActivities ?? []).toEqual([]);
    const listed = await eventually(async () => {
      const runs = await world.client.listRuns({ status: 'waiting' });
      return runs.find((entry) => entry.workflow_id === run.workflowId);
    });
    expect(listed.status).toBe('waiting');

    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'Done waiting.' });
    await recordHistory(run, 'durable-sleep');
    const messages = await conversation(run);
    const woke = resultOf(messages, 'call_s');
    expect(woke).toMatchObject({ woke: 'time', wake_at: status.wake_at });
    // The timer fired within 2 s of its time.
    const [fired] = await timersFired(run);
    expect(Math.abs(fired! - Date.parse(status.wake_at!))).toBeLessThan(2000);
    // The model was offered both wait tools, and read the result after its call.
    expect(bodies(world)[0]!.tools!.map((tool) => tool.function.name)).toEqual(['sleep', 'wait_for_event']);
    expect(bodies(world)[1]!.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_s',
      content: JSON.stringify(woke),
    });
    world.fake.assertDone();
  });

  it('a user message wakes it early: the result says so and the message follows it', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: {
        script: [
          callTools([toolCall('call_s', 'sleep', { seconds: 3600, reason: 'an hour' })]),
          reply('You asked me to stop waiting.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Wait an hour.' });
    await waiting(run);
    await run.submit('Stop waiting, please.');
    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'You asked me to stop waiting.' });
    const messages = await conversation(run);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
    expect(resultOf(messages, 'call_s')).toMatchObject({ woke: 'user_message' });
    expect(messages[3]).toEqual({ role: 'user', content: 'Stop waiting, please.' });
    expect(bodies(world)[1]!.messages.slice(1)).toEqual(messages.slice(0, 4));
  });

  it('an abort wakes it early: the call gets the cancellation, the transcript stays valid', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: { script: [callTools([toolCall('call_s', 'sleep', { seconds: 3600, reason: 'an hour' })])] },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Wait an hour.' });
    await waiting(run);
    await run.abort('no more waiting');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('no more waiting');
    const messages = await conversation(run);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[2]!['content']).toContain('no more waiting');
    expect(world.fake.requests).toHaveLength(1);
  });

  it('a wait longer than max_seconds, or arguments that do not parse, get an error result', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [{ ...WAITER, waits: { max_seconds: 60 } }],
      fake: {
        script: [
          callTools([
            toolCall('call_long', 'sleep', { seconds: 120, reason: 'too long' }),
            toolCall('call_both', 'sleep', { seconds: 1, until: '2030-01-01T00:00:00Z', reason: 'both' }),
          ]),
          reply('I cannot wait that long.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Wait two minutes.' });
    expect((await run.result()).status).toBe('completed');
    const messages = await conversation(run);
    expect(messages[2]!['content']).toContain('a wait may last at most 60 seconds (this one: 120)');
    expect(messages[3]!['content']).toContain('give seconds or until (one of them)');
    // Only sleep: this agent's waits name no events.
    expect(bodies(world)[0]!.tools!.map((tool) => tool.function.name)).toEqual(['sleep']);
  });
});

describe('wait_for_event', () => {
  it('takes an event delivered during the wait, one delivered before it, and times out without one', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: {
        script: [
          callTools([toolCall('call_e1', 'wait_for_event', { name: 'build', timeout_seconds: 3600 })]),
          // While this sleep waits, a deploy event comes: it is held for the next wait for it.
          callTools([toolCall('call_s', 'sleep', { seconds: 3600, reason: 'until told' })]),
          callTools([toolCall('call_e2', 'wait_for_event', { name: 'deploy', timeout_seconds: 3600 })]),
          callTools([toolCall('call_e3', 'wait_for_event', { name: 'build', timeout_seconds: 1 })]),
          reply('Built, deployed, and no second build.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Watch the pipeline.' });
    const first = await waiting(run);
    expect(first.waiting).toEqual([
      { tool_call_id: 'call_e1', tool: 'wait_for_event', wake_at: first.wake_at, event: 'build' },
    ]);
    const built = await run.deliverEvent('build', { commit: 'abc123', green: true }, { key: 'build-1' });
    expect(built).toEqual({ accepted: true, duplicate: false, taken_by_wait: true, held: 0 });
    await eventually(async () => ((await run.status()).waiting?.[0]?.tool === 'sleep' ? true : undefined));
    const deployed = await run.deliverEvent('deploy', { env: 'prod' });
    expect(deployed).toEqual({ accepted: true, duplicate: false, taken_by_wait: false, held: 1 });
    expect((await run.status()).held_events).toBe(1);
    await run.submit('The deploy went out; check it.');
    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'Built, deployed, and no second build.' });
    await recordHistory(run, 'durable-events');

    const messages = await conversation(run);
    expect(resultOf(messages, 'call_e1')).toMatchObject({
      event: 'build',
      payload: { commit: 'abc123', green: true },
      key: 'build-1',
    });
    expect(resultOf(messages, 'call_s')).toMatchObject({ woke: 'user_message' });
    expect(resultOf(messages, 'call_e2')).toMatchObject({
      event: 'deploy',
      payload: { env: 'prod' },
      waited_seconds: 0,
    });
    expect(resultOf(messages, 'call_e3')).toMatchObject({ timed_out: true, event: 'build' });
    const received = (await run.allEvents()).events.filter((event) => event.event_type === 'event_received');
    expect(received.map((event) => [event['name'], event['taken_by_wait']])).toEqual([
      ['build', true],
      ['deploy', false],
    ]);
  });

  it('applies a key delivered twice once; refuses a name the agent does not wait for, with the reason', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: {
        script: [callTools([toolCall('call_s', 'sleep', { seconds: 3600, reason: 'holding' })]), reply('Stopped.')],
      },
    });
    const run = await world.client.start({ agent: 'waiter', input: 'Hold on.' });
    await waiting(run);
    // The same key twice through the client: Temporal answers the repeat with the first answer.
    const once = await run.deliverEvent('build', { n: 1 }, { key: 'k-1' });
    const again = await run.deliverEvent('build', { n: 2 }, { key: 'k-1' });
    expect(again).toEqual(once);
    // The same key under another update id, with the Temporal CLI as docs/agents-in-time.md writes it:
    // refused as a repeat before anything is recorded.
    const temporal = await temporalCli(
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      run.workflowId,
      '--name',
      'deliver_event',
      '--input',
      JSON.stringify({ name: 'build', payload: { n: 3 }, key: 'k-1' }),
    );
    expect(temporal.status).not.toBe(0);
    expect(temporal.stderr).toContain("event key 'k-1' was delivered already: nothing changed");
    // And with patchloop's CLI, as the page writes it: the same key once more.
    const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const patchloop = await runCli(['event', run.workflowId, 'build', '{"n": 4}', '--key', 'k-1'], env);
    expect(patchloop.code, patchloop.stderr).toBe(0);
    expect(JSON.parse(patchloop.stdout)).toMatchObject({ workflow_id: run.workflowId, name: 'build', accepted: true });
    // And with Temporal's HTTP API, as the page writes it.
    const http = await curl('POST', `/workflows/${run.workflowId}/update/deliver_event`, {
      request: {
        meta: { updateId: 'build-http' },
        input: { args: [{ name: 'build', payload: { n: 5 }, key: 'k-1' }] },
      },
      waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
    });
    expect((http['outcome'] as { failure: unknown }).failure).toMatchObject({
      message: "event key 'k-1' was delivered already: nothing changed",
      applicationFailureInfo: { type: 'EventAlreadyDelivered', nonRetryable: true },
    });
    // Repeats cost the run no history, however many come.
    const before = (await run.historySize()).events;
    for (let attempt = 0; attempt < 5; attempt += 1)
      await curl('POST', `/workflows/${run.workflowId}/update/deliver_event`, {
        request: { meta: { updateId: `repeat-${attempt}` }, input: { args: [{ name: 'build', key: 'k-1' }] } },
        waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
      });
    expect((await run.historySize()).events).toBe(before);
    // A key first delivered another way: our client answers its repeat as a delivered duplicate.
    await curl('POST', `/workflows/${run.workflowId}/update/deliver_event`, {
      request: { meta: { updateId: 'k-2-by-http' }, input: { args: [{ name: 'deploy', key: 'k-2' }] } },
      waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
    });
    expect(await run.deliverEvent('deploy', null, { key: 'k-2' })).toEqual({
      accepted: true,
      duplicate: true,
      taken_by_wait: false,
      held: 2,
    });
    expect((await run.status()).held_events).toBe(2);

    const refused = await run.deliverEvent('payroll', {}).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EventRefusedError);
    expect((refused as Error).message).toBe(
      "event 'payroll' refused: this run's agent waits only for 'build', 'deploy'",
    );
    const refusedByCli = await runCli(['event', run.workflowId, 'payroll', '{}'], env);
    expect(refusedByCli.code).toBe(1);
    expect(refusedByCli.stderr).toBe(
      "error: event 'payroll' refused: this run's agent waits only for 'build', 'deploy'\n",
    );
    await run.abort('done');
    // The event no wait took is named in the result (its payload stays with its sender).
    expect((await run.result()).unprocessed_events).toEqual([
      { name: 'build', key: 'k-1', received_at: expect.any(String), payload_bytes: 7 },
      { name: 'deploy', key: 'k-2', received_at: expect.any(String), payload_bytes: 4 },
    ]);
    const received = (await run.allEvents()).events.filter((event) => event.event_type === 'event_received');
    expect(received).toHaveLength(2);
  });
});

describe('waits in sessions', () => {
  it("a session's turn waits for an event and answers with it", async ({ startWorld }) => {
    const world = await startWorld({
      agents: [WAITER],
      fake: {
        script: [
          callTools([toolCall('call_e', 'wait_for_event', { name: 'build', timeout_seconds: 600 })]),
          reply('The build is green.'),
        ],
      },
    });
    const session = await world.client.startSession({ agent: 'waiter' });
    const answer = session.send('Tell me when the build is done.');
    await waiting(session);
    await session.deliverEvent('build', { green: true });
    expect((await answer).reply).toBe('The build is green.');
    const messages = await conversation(session);
    expect(resultOf(messages, 'call_e')).toMatchObject({ event: 'build', payload: { green: true } });
    await eventOf(session, 'wait_ended');
  });
});
