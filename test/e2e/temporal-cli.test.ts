import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { validateToolLinkage, type Message } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import { temporalCli } from '../support/temporal';
import { eventually, replyReceived } from '../support/wait';

const temporal = temporalCli;

describe('the temporal CLI as a client', () => {
  it('starts a run, queries it and reads its result', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'c1', name: 'add', arguments: '{"a": 20, "b": 22}' }]), reply('42')] },
    });
    const id = `cli-${randomUUID()}`;
    const start = await temporal(
      'workflow',
      'start',
      '--type',
      'agentRun',
      '--task-queue',
      world.config.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify({ agent: 'assistant', input: 'What is 20 + 22?' }),
    );
    expect(start.status, start.stderr).toBe(0);
    const result = await temporal('workflow', 'result', '--workflow-id', id, '--output', 'json');
    expect(result.status, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      status: string;
      result: { status: string; answer: string; transcript: unknown[] };
    };
    expect(parsed.result.status).toBe('completed');
    expect(parsed.result.answer).toBe('42');
    const query = await temporal('workflow', 'query', '--workflow-id', id, '--name', 'status', '--output', 'json');
    expect(query.status, query.stderr).toBe(0);
    expect(JSON.parse(query.stdout).queryResult[0]).toMatchObject({ state: 'completed', llm_calls: 2, tool_calls: 1 });
  });

  it('aborts a run with `temporal workflow signal --name abort`', async ({ startWorld }) => {
    const world = await startWorld({ fake: { script: [{ kind: 'hang', chunks: ['Working on '] }] } });
    const id = `cli-${randomUUID()}`;
    const start = await temporal(
      'workflow',
      'start',
      '--type',
      'agentRun',
      '--task-queue',
      world.config.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify({ agent: 'assistant', input: 'long job' }),
    );
    expect(start.status, start.stderr).toBe(0);
    await world.fake.waitForRequests(1);
    await replyReceived(world.client.run(id), 'Working on '.length);
    const signal = await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      id,
      '--name',
      'abort',
      '--input',
      JSON.stringify({ reason: 'ops' }),
    );
    expect(signal.status, signal.stderr).toBe(0);
    const result = JSON.parse(
      (await temporal('workflow', 'result', '--workflow-id', id, '--output', 'json')).stdout,
    ) as { result: { status: string; transcript: Message[] } };
    expect(result.result.status).toBe('aborted');
    expect(result.result.transcript.at(-1)).toEqual({
      role: 'assistant',
      content: 'Working on <Truncated due to cancel from user. Reason: ops>',
    });
    validateToolLinkage(result.result.transcript);
  });

  it('reports invalid input through the CLI as a failed run with the readable message', async ({ startWorld }) => {
    const world = await startWorld();
    const id = `cli-${randomUUID()}`;
    await temporal(
      'workflow',
      'start',
      '--type',
      'agentRun',
      '--task-queue',
      world.config.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify({ agent: 'assistant', input: 42 }),
    );
    const result = await temporal('workflow', 'result', '--workflow-id', id, '--output', 'json');
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('invalid agentRun input');
  });
});

describe('what the Temporal UI and CLI show of a run', () => {
  it('search attributes for the list, a summary, activity summaries, current details, a named abort timer', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([
            { id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' },
            { id: 'c2', name: 'repeat', arguments: '{"text": "x", "times": 2}' },
          ]),
          reply('3 and xx'),
          { kind: 'hang', chunks: ['thinking '], chunkDelayMs: 20 },
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'What is 1 + 2?\nAnd repeat x twice.' });
    await run.result();
    const listed = await temporal(
      'workflow',
      'list',
      '--query',
      `WorkflowId = '${run.workflowId}' AND PatchloopAgent = 'assistant' AND PatchloopStatus = 'completed' AND PatchloopToolCalls = 2`,
      '--output',
      'json',
    );
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(run.workflowId);
    const description = await run.workflow.describe();
    expect(await description.staticSummary()).toBe('assistant: What is 1 + 2? And repeat x twice.');
    const attributes = description.searchAttributes as Record<string, unknown[]>;
    expect(attributes).toMatchObject({
      PatchloopAgent: ['assistant'],
      PatchloopStatus: ['completed'],
      PatchloopIterations: [2],
      PatchloopToolCalls: [2],
    });
    expect(Number(attributes['PatchloopTotalTokens']?.[0])).toBeGreaterThan(0);
    // The timeline's bars say what each activity did, the local one of the agent (its marker) too; the
    // fast tools ran in the first model call's activity.
    const history = await run.workflow.fetchHistory();
    const summaries = (history.events ?? []).flatMap((event) => {
      const data = event.userMetadata?.summary?.data;
      const activity = event.activityTaskScheduledEventAttributes ?? event.markerRecordedEventAttributes;
      return activity && data ? [JSON.parse(Buffer.from(data).toString())] : [];
    });
    expect(summaries).toEqual(['resolve agent assistant', 'llm call 1', 'llm call 2']);

    // While running: current details, and an abort's wait timer that says what it waits for.
    const running = await world.client.start({ agent: 'assistant', input: 'think' });
    await eventually(async () => {
      const metadata = await running.workflow.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      return metadata.currentDetails === 'iteration 0: model call 1' ? true : undefined;
    });
    const metadata = await running.workflow.query<{ definition?: { queryDefinitions?: Array<{ name: string }> } }>(
      '__temporal_workflow_metadata',
    );
    // After the SDK's own (__stack_trace, ...): the queries a person can call without arguments.
    const queries = (metadata.definition?.queryDefinitions ?? []).map((query) => query.name);
    expect(queries.filter((name) => !name.startsWith('__')).slice(0, 2)).toEqual(['status', 'transcript']);
    await running.abort('enough');
    await running.result();
    const timers = ((await running.workflow.fetchHistory()).events ?? []).flatMap((event) => {
      const data = event.userMetadata?.summary?.data;
      return event.timerStartedEventAttributes && data ? [JSON.parse(Buffer.from(data).toString())] : [];
    });
    expect(timers).toEqual(['abort: waits up to 10 s for the phase to hand back its partial results']);
  });
});
