import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { extendBudgetUpdate, userMessageUpdate } from '../../src/common';
import { validateToolLinkage } from '../../src/context';
import { RUN_STATE_SCHEMA_VERSION } from '../../src/runtime';
import { callTools, reply, type FakeStep } from '../../src/fake-model/steps';
import { type TestWorld } from '../support/temporal';
import { eventOf, recordCarriedState, recordHistory } from '../support/wait';

/** Twelve iterations of one `add` call each, then an answer. */
function script(): FakeStep[] {
  return [
    ...Array.from({ length: 12 }, (_, index) =>
      callTools([{ id: `call_${index}`, name: 'add', arguments: JSON.stringify({ a: index, b: 1 }) }]),
    ),
    reply('all added'),
  ];
}

/** Runs in the chain of a workflow id, counted from its history: how often it continued as new. */
async function runsInChain(world: TestWorld, workflowId: string): Promise<number> {
  let runs = 0;
  for await (const _execution of world.client.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs += 1;
  return runs;
}

describe('agentRun continues as new', () => {
  it('carries its whole state: every request is byte-identical to a run that never continued', async ({
    startWorld,
  }) => {
    const bodies: string[][] = [];
    const chains: number[] = [];
    for (const maxEvents of [40, 100_000]) {
      const world = await startWorld({ fake: { script: script() } });
      const workflowId = `can-${maxEvents}-${Date.now()}`;
      const run = await world.client.start(
        { agent: 'assistant', input: 'add them all', continue_as_new: { max_history_events: maxEvents } },
        { workflowId },
      );
      const result = await run.result();
      expect(result.status).toBe('completed');
      expect(result.answer).toBe('all added');
      // The result of the last run is the result of the whole run: all twelve calls and their results.
      expect(result.transcript.filter((message) => message['role'] === 'tool')).toHaveLength(12);
      validateToolLinkage(result.transcript);
      expect(result.usage?.total_tokens).toBeGreaterThan(0);
      bodies.push(world.fake.requests.map((request) => JSON.stringify(request.body)));
      chains.push(await runsInChain(world, workflowId));
      const status = await run.status();
      expect(status.llm_calls).toBe(13);
      expect(status.tool_calls).toBe(12);
      world.fake.assertDone();
      if (maxEvents === 40) {
        await recordHistory(run, 'run-continued-as-new');
        // The first run of the chain: the one whose code decided to continue as new.
        await recordHistory(
          run,
          'run-continues-as-new',
          (run.workflow as { firstExecutionRunId?: string }).firstExecutionRunId,
        );
        await recordCarriedState(run, 'agent-run-v1');
      }
      await world.close();
    }
    expect(chains[0]).toBeGreaterThanOrEqual(3);
    expect(chains[1]).toBe(1);
    expect(bodies[0]).toHaveLength(13);
    expect(bodies[0]).toEqual(bodies[1]);
  });

  it('signals, queries and the tool budget keep working across the boundary', async ({ startWorld }) => {
    const slowAdd = (index: number) =>
      callTools([{ id: `call_${index}`, name: 'add', arguments: JSON.stringify({ a: index, b: 2 }) }], {
        firstChunkDelayMs: 400,
      });
    const world = await startWorld({
      fake: {
        script: [
          ...Array.from({ length: 6 }, (_, index) => slowAdd(index)),
          // A seventh call passes the budget of 6 (counted across the chain): dropped, one last call.
          callTools([{ id: 'call_7', name: 'add', arguments: '{"a": 7, "b": 7}' }]),
          reply('done within the budget'),
        ],
      },
    });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'add six times',
      max_tool_calls: 6,
      continue_as_new: { max_history_events: 30 },
    });
    // The message arrives in a later run of the chain and is folded in at its next boundary.
    await eventOf(run, 'continued_as_new');
    await run.sendUserMessage('a message for the next run');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('done within the budget');
    expect(
      result.transcript.filter((message) => message['role'] === 'user').map((message) => message['content']),
    ).toEqual(['add six times', 'a message for the next run']);
    expect(result.transcript.filter((message) => message['role'] === 'tool')).toHaveLength(6);
    expect(JSON.stringify(result.transcript)).not.toContain('call_7');
    const last = world.fake.requests.at(-1)!.body;
    expect(last.tools).toBeUndefined();
    const status = await run.status();
    expect((status as unknown as { continued_as_new: number }).continued_as_new).toBeGreaterThanOrEqual(1);
    expect([status.llm_calls, status.tool_calls]).toEqual([8, 6]);
    world.fake.assertDone();
  });

  it("a client's retry of an update after the boundary is answered from the first, not applied again", async ({
    startWorld,
  }) => {
    // The server deduplicates update ids within one run only; when continue-as-new drops an update's
    // completion (temporalio/temporal#6375), the client sends the same id again and it lands on the new run.
    const world = await startWorld({
      fake: {
        script: [
          ...Array.from({ length: 5 }, (_, index) =>
            callTools([{ id: `call_${index}`, name: 'add', arguments: JSON.stringify({ a: index, b: 4 }) }], {
              firstChunkDelayMs: 300,
            }),
          ),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'add five times',
      continue_as_new: { max_history_events: 30 },
    });
    const message = { args: [{ content: 'only once' }] as [{ content: string }], updateId: 'message-1' };
    const first = await run.workflow.executeUpdate(userMessageUpdate, message);
    const extension = { args: [{ llm_calls: 5 }] as [{ llm_calls: number }], updateId: 'extend-1' };
    const extended = await run.workflow.executeUpdate(extendBudgetUpdate, extension);
    await eventOf(run, 'continued_as_new');
    // The retries, as the client sends them: by workflow id, so they reach the chain's current run.
    expect(await run.workflow.executeUpdate(userMessageUpdate, message)).toEqual(first);
    expect(await run.workflow.executeUpdate(extendBudgetUpdate, extension)).toEqual(extended);
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.transcript.filter((entry) => entry['role'] === 'user').map((entry) => entry['content'])).toEqual([
      'add five times',
      'only once',
    ]);
    const status = await run.status();
    expect(status.events.filter((event) => event.event_type === 'budget_extended')).toHaveLength(1);
    expect((status as unknown as { continued_as_new: number }).continued_as_new).toBeGreaterThanOrEqual(1);
    world.fake.assertDone();
    // The state this build carries, updates included (a fixture every later build must load).
    await recordCarriedState(run, `agent-run-v${RUN_STATE_SCHEMA_VERSION}`);
  });

  it('an abort after the boundary ends the whole run with a valid transcript', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          ...Array.from({ length: 4 }, (_, index) =>
            callTools([{ id: `call_${index}`, name: 'add', arguments: JSON.stringify({ a: index, b: 3 }) }]),
          ),
          callTools([{ id: 'call_wait', name: 'wait', arguments: '{"seconds": 30}' }]),
        ],
      },
    });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'add, then wait',
      continue_as_new: { max_history_events: 30 },
    });
    await eventOf(run, 'tool_call_start', (event) => 'tool_call_id' in event && event.tool_call_id === 'call_wait');
    expect((await run.status()).events.some((event) => event.event_type === 'continued_as_new')).toBe(true);
    await run.abort('stop');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.transcript.filter((message) => message['role'] === 'tool')).toHaveLength(5);
    expect(result.transcript.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_wait',
      content: '<Tool execution cancelled by user. Tool: wait. Reason: stop>',
    });
    validateToolLinkage(result.transcript);
    world.fake.assertDone();
  });
});
