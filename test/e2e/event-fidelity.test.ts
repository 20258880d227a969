import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { eventsQuery } from '../../src/common/definitions';
import { callTools, reply } from '../../src/fake-model/steps';
import type { EventOrigin, RunEvent, RunStatus } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';
import { imageUrl } from '../../src/tools/images';
import { runCli } from '../support/cli';
import { eventually } from '../support/wait';

/** Waits until the other call of the batch has finished: the completion order is fixed, not raced. */
let fastDone: () => void = () => undefined;
const slowNote = defineTool({
  name: 'slow_note',
  description: 'Notes slowly, reporting progress.',
  parameters: z.object({ thing: z.string() }),
  execute: async ({ thing }, { emit }) => {
    emit('progress', { step: 1 });
    await new Promise<void>((resolve) => (fastDone = resolve));
    emit('progress', { step: 2 });
    return `slow ${thing}`;
  },
});
const fastNote = defineTool({
  name: 'fast_note',
  description: 'Notes at once.',
  parameters: z.object({ thing: z.string() }),
  execute: ({ thing }, { emit }) => {
    emit('progress', { step: 1 });
    // Finishes first, then lets the slow call go on.
    setTimeout(() => fastDone(), 50);
    return `fast ${thing}`;
  },
});
const chart = defineTool({
  name: 'chart',
  description: 'Draws a chart.',
  parameters: z.object({}),
  execute: () => imageUrl('https://example.com/chart.png', 'low'),
});

/** An event as [type, name-or-tool-call-id]: enough to pin the order of a sequence. */
const shape = (event: RunEvent): string =>
  event.event_type === 'custom_event'
    ? `custom_event ${event.event_name} ${event.tool_call_id}`
    : 'tool_call_id' in event
      ? `${event.event_type} ${event.tool_call_id}`
      : event.event_type;

/** Spec 7.8's fields per event type. */
const SPEC_FIELDS: Record<string, string[]> = {
  react_start: ['user_task_prompt', 'initial_messages', 'available_tools'],
  react_iteration_start: ['current_messages'],
  llm_call_start: ['messages', 'tools', 'llm_kwargs', 'stream'],
  llm_call_end: ['response', 'messages', 'tool_calls', 'execution_time', 'content', 'reasoning_details', 'usage'],
  tool_calls_batch_start: ['tool_calls', 'batch_size'],
  tool_call_start: ['tool_name', 'tool_call_id', 'arguments', 'tool_call'],
  tool_call_end: ['tool_name', 'tool_call_id', 'arguments', 'result', 'execution_time', 'success'],
  tool_call_error: ['tool_name', 'tool_call_id', 'arguments', 'error', 'error_message', 'error_type', 'execution_time'],
  tool_calls_batch_end: ['tool_results', 'batch_size', 'total_execution_time', 'success_count', 'error_count'],
  react_iteration_end: ['messages', 'iteration_time', 'tool_calls_count'],
  react_end: [
    'final_response',
    'final_messages',
    'total_iterations',
    'total_execution_time',
    'total_tool_calls',
    'total_llm_calls',
    'total_token_usage',
  ],
  custom_event: ['event_name', 'data', 'tool_name', 'tool_call_id'],
};
/**
 * What patchloop leaves out on purpose (README, "The event stream"): message lists and full results
 * (the log lives in workflow memory; `message_count`, previews and the transcript query stand in), and
 * what repeats another event (`arguments` and `tool_call` are on `tool_call_start`).
 */
const LEFT_OUT: Record<string, string[]> = {
  react_start: ['initial_messages'],
  react_iteration_start: ['current_messages'],
  llm_call_start: ['messages', 'tools', 'llm_kwargs'],
  llm_call_end: ['response', 'messages', 'reasoning_details'],
  tool_call_start: ['tool_call'],
  tool_call_end: ['arguments'],
  tool_call_error: ['arguments'],
  tool_calls_batch_end: ['tool_results'],
  react_iteration_end: ['messages', 'iteration_time'],
  react_end: ['final_messages', 'total_execution_time'],
};

/** Every spec field of the event's type is there, or left out on purpose; the common fields always. */
function expectSpecShape(event: RunEvent): void {
  const present = Object.keys(event);
  const missing = (SPEC_FIELDS[event.event_type] ?? []).filter((field) => !present.includes(field));
  expect([event.event_type, missing]).toEqual([event.event_type, LEFT_OUT[event.event_type] ?? []]);
  for (const field of ['event_type', 'timestamp', 'trace_id', 'func_name', 'iteration', 'extra', 'origin'])
    expect(present, `${event.event_type} lacks ${field}`).toContain(field);
}

const memo = { name: 'memo', instructions: 'You delegate.', tools: ['add'], selfref: true };

describe('event stream fidelity to the reference runtime (spec 6.6, 7.4, 7.8)', () => {
  it('a parallel batch: start, each call start, then per completion its custom events and end, then batch end; origins on every event', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [addTool, slowNote, fastNote],
      agents: [{ name: 'noter', instructions: 'x', tools: ['slow_note', 'fast_note'] }],
      fake: {
        script: [
          callTools([
            { id: 'slow', name: 'slow_note', arguments: '{"thing": "a"}' },
            { id: 'fast', name: 'fast_note', arguments: '{"thing": "b"}' },
          ]),
          reply('noted'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'noter', input: 'note both' });
    await run.result();
    const { events } = await run.workflow.query(eventsQuery, {});
    expect(events.map(shape)).toEqual([
      'react_start',
      'llm_call_start',
      'llm_call_end',
      'tool_calls_batch_start',
      'tool_call_start slow',
      'tool_call_start fast',
      'custom_event progress fast',
      'tool_call_end fast',
      'custom_event progress slow',
      'custom_event progress slow',
      'tool_call_end slow',
      'tool_calls_batch_end',
      'react_iteration_end',
      'react_iteration_start',
      'llm_call_start',
      'llm_call_end',
      'react_end',
    ]);
    for (const event of events) expectSpecShape(event);
    const id = run.workflowId;
    const origins = events.map((event) => event.origin!);
    expect(origins.map((origin) => origin.event_seq)).toEqual(events.map((_, index) => index + 1));
    for (const [index, origin] of origins.entries()) {
      const event = events[index]!;
      const tool = 'tool_call_id' in event ? { tool_name: event.tool_name, tool_call_id: event.tool_call_id } : null;
      expect(origin).toEqual({
        session_id: id,
        agent_call_id: id,
        event_seq: index + 1,
        parent_agent_call_id: null,
        fork_id: null,
        fork_depth: 0,
        fork_seq: null,
        selfref_instance_id: null,
        source_memory_key: null,
        memory_key: id,
        tool_name: tool?.tool_name ?? null,
        tool_call_id: tool?.tool_call_id ?? null,
      } satisfies EventOrigin);
    }
    world.fake.assertDone();
  });

  it('a fork that forks again: the root’s follow --json shows every descendant’s events with nested origins, in place', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [memo],
      fake: {
        script: [
          callTools([{ id: 'f1', name: 'selfref_fork', arguments: '{"message": "go deeper"}' }]),
          callTools([{ id: 'f2', name: 'selfref_fork', arguments: '{"message": "add 2 and 3"}' }]),
          callTools([{ id: 'g_add', name: 'add', arguments: '{"a": 2, "b": 3}' }]),
          reply('5'),
          reply('the grandchild says 5'),
          reply('the child says 5'),
        ],
      },
    });
    const run = await world.client.start(
      { agent: 'memo', input: 'delegate twice' },
      { workflowId: `tree-${Date.now()}` },
    );
    await run.result();
    const root = run.workflowId;
    const child = `${root}::fork::1`;
    const grandchild = `${child}::fork::1`;
    const follow = await runCli(['follow', root, '--json'], {
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
    });
    expect(follow.code, follow.stderr).toBe(0);
    const lines = follow.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RunEvent & { origin?: EventOrigin });
    const events = lines.filter((line) => line.origin !== undefined);
    for (const event of events) expectSpecShape(event);
    // Every descendant's whole log is there, each event once.
    const byRun = (id: string) => events.filter((event) => event.run_id === id);
    for (const id of [root, child, grandchild]) {
      const seqs = byRun(id).map((event) => event.origin!.event_seq);
      expect(seqs).toEqual(seqs.map((_, index) => index + 1));
      expect(byRun(id).at(-1)!.event_type).toBe('react_end');
    }
    expect(byRun(grandchild).map(shape)).toContain('tool_call_end g_add');
    // Origins: the whole tree shares the root's session; forks name their parent, depth and keys.
    expect(byRun(child)[0]!.origin).toMatchObject({
      session_id: root,
      agent_call_id: child,
      parent_agent_call_id: root,
      fork_id: 'fork_1',
      fork_depth: 1,
      source_memory_key: root,
      memory_key: child,
    });
    expect(byRun(grandchild)[0]!.origin).toMatchObject({
      session_id: root,
      agent_call_id: grandchild,
      parent_agent_call_id: child,
      fork_id: 'fork_1',
      fork_depth: 2,
      source_memory_key: child,
      memory_key: grandchild,
    });
    // In place: a child's events sit between its parent's fork start and fork end.
    const position = (predicate: (event: RunEvent) => boolean) => events.findIndex(predicate);
    const forkEvent = (runId: string, name: string) =>
      position((event) => event.run_id === runId && event.event_type === 'custom_event' && event.event_name === name);
    const inside = (runId: string, parent: string) => {
      const first = position((event) => event.run_id === runId);
      const last = events.map((event) => event.run_id).lastIndexOf(runId);
      expect(first).toBeGreaterThan(forkEvent(parent, 'selfref_fork_start'));
      expect(last).toBeLessThan(forkEvent(parent, 'selfref_fork_end'));
    };
    inside(child, root);
    inside(grandchild, child);
    // The children's own ends do not become the parent's: the root ends once, with its own answer.
    expect(byRun(root).filter((event) => event.event_type === 'react_end')).toHaveLength(1);
    expect(byRun(root).at(-1)).toMatchObject({ event_type: 'react_end', final_response: 'the child says 5' });
    world.fake.assertDone();
  });

  it('llm_call_end.usage is the usage-only tail chunk of a stream', async ({ startWorld }) => {
    const usage = { prompt_tokens: 17, completion_tokens: 4, total_tokens: 21 };
    const world = await startWorld({ fake: { script: [reply(['one ', 'two'], { usage })] } });
    const run = await world.client.start({ agent: 'assistant', input: 'count' });
    await run.result();
    // The request asked for it, and the stream's last data chunk held it with no choices.
    expect(world.fake.requests[0]!.body['stream_options']).toEqual({ include_usage: true });
    const { events } = await run.workflow.query(eventsQuery, {});
    expect(events.find((event) => event.event_type === 'llm_call_end')).toMatchObject({ usage });
    expect(events.at(-1)).toMatchObject({ event_type: 'react_end', total_token_usage: usage });
  });

  it('llm_call_end says how the call went on the wire: streamed as asked, or plain when the profile sent it so', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [addTool],
      agents: [
        // llama-cpp-python cannot stream with tool_choice auto: its profile sends those calls plain.
        { name: 'local', instructions: 'You add.', tools: ['add'], provider: { profile: 'llama-cpp' } },
        { name: 'hosted', instructions: 'You add.', tools: ['add'] },
      ],
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' }]),
          reply('3'),
          reply('nothing to add'),
        ],
      },
    });
    const local = await world.client.start({ agent: 'local', input: 'add 1 and 2' });
    expect((await local.result()).answer).toBe('3');
    const hosted = await world.client.start({ agent: 'hosted', input: 'hello' });
    expect((await hosted.result()).answer).toBe('nothing to add');
    expect(world.fake.requests.map((request) => request.body.stream)).toEqual([false, false, true]);
    const calls = async (run: typeof local) =>
      (await run.workflow.query(eventsQuery, {})).events.flatMap((event) =>
        event.event_type === 'llm_call_start'
          ? [`start ${event.llm_call} stream ${event.stream}`]
          : event.event_type === 'llm_call_end'
            ? [`end ${event.llm_call} streamed ${event.streamed}`]
            : [],
      );
    expect(await calls(local)).toEqual([
      'start 1 stream true',
      'end 1 streamed false',
      'start 2 stream true',
      'end 2 streamed false',
    ]);
    expect(await calls(hosted)).toEqual(['start 1 stream true', 'end 1 streamed true']);
    world.fake.assertDone();
  });

  it('a multimodal tool: tool_call_end.result is the tool’s return value, not the restructured messages', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [addTool, chart],
      agents: [{ name: 'painter', instructions: 'x', tools: ['chart'] }],
      fake: { script: [callTools([{ id: 'c', name: 'chart', arguments: '{}' }]), reply('a chart')] },
    });
    const run = await world.client.start({ agent: 'painter', input: 'draw' });
    await run.result();
    const { events } = await run.workflow.query(eventsQuery, {});
    expect(events.find((event) => event.event_type === 'tool_call_end')).toMatchObject({
      tool_call_id: 'c',
      result: { type: 'image_url', url: 'https://example.com/chart.png', detail: 'low' },
    });
    // The model still got the image as a user message.
    const sent = world.fake.requests[1]!.body.messages.at(-1)!;
    expect(sent['role']).toBe('user');
    expect(JSON.stringify(sent['content'])).toContain('https://example.com/chart.png');
  });

  it('event_seq starts at 1 and only increases across continue-as-new', async ({ startWorld }) => {
    const calls = Array.from({ length: 8 }, (_, index) =>
      callTools([{ id: `a${index}`, name: 'add', arguments: `{"a": ${index}, "b": 1}` }]),
    );
    const world = await startWorld({ fake: { script: [...calls, reply('done')] } });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'add a lot',
      continue_as_new: { max_history_events: 30 },
    });
    // Read the log while it runs, as a follower would, across the chain's runs.
    const seen: number[] = [];
    let after = 0;
    let settled = false;
    void run.result().finally(() => (settled = true));
    await eventually(
      async () => {
        const page = await run.workflow.query(eventsQuery, { after }).catch(() => null);
        for (const event of page?.events ?? []) seen.push(event.origin!.event_seq);
        after = page?.next_after ?? after;
        return settled && page?.events.length === 0 ? true : undefined;
      },
      120_000,
      'the whole log',
    );
    const result = await run.result();
    expect(result.status).toBe('completed');
    const status = (await run.status()) as RunStatus & { continued_as_new: number };
    expect(status.continued_as_new).toBeGreaterThan(0);
    expect(seen[0]).toBe(1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
  });
});
