import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { testWithWorld } from '../support/fixtures';
import { z } from 'zod';
import { followRun } from '../../src/client/follow';
import { readChunks } from '../../src/streaming/chunk-client';
import type { RunHandle } from '../../src/client/patchloop-client';
import { userMessageSignal } from '../../src/common';
import { callTools, reply, toolCall as call } from '../../src/fake-model/steps';
import type { Responder } from '../../src/fake-model/server';
import type { AgentDefinitionInput, RunEvent, StreamEvent } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { addTool, waitTool } from '../../src/tools/examples';
import { scriptsByAgent } from '../../support/agent-scripts';
import { tools as pageTools } from '../support/context-tools';
import { isSummaryCall, pageReader } from '../../support/context-model';
import { awaitingApproval, eventOf } from '../support/wait';

/**
 * Every event and chunk that real runs emit, validated against the published JSON Schemas
 * (schemas/run-event.schema.json, schemas/stream-event.schema.json) with a standard validator: the
 * protocol the console, `follow` and other programs read is the one documented.
 */
const root = join(__dirname, '..', '..');
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validRunEvent = ajv.compile(JSON.parse(readFileSync(join(root, 'schemas/run-event.schema.json'), 'utf8')));
const validStreamEvent = ajv.compile(JSON.parse(readFileSync(join(root, 'schemas/stream-event.schema.json'), 'utf8')));

const explode = defineTool({
  name: 'explode',
  description: 'Reports progress, then takes longer than it may (a ToolTimeout error).',
  parameters: z.object({}),
  timeoutSeconds: 0.3,
  execute: async (_args, { emit, signal }) => {
    emit('progress', { step: 1 });
    // Told to stop at its timeout, it stops (a value returned then would be its result).
    await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped'))));
  },
});

const agents: AgentDefinitionInput[] = [
  {
    name: 'worker',
    instructions: 'You work.',
    tools: ['add', 'explode'],
    subagents: ['clerk'],
    handoffs: ['closer'],
  },
  { name: 'clerk', instructions: 'You file things.' },
  { name: 'closer', instructions: 'You close cases.' },
  { name: 'gated', instructions: 'You ask first.', tools: ['add', 'wait'], needs_approval: ['add', 'wait'] },
  { name: 'reader', instructions: 'You read reports.', tools: ['read_page'], context: { window_tokens: 12_000 } },
];

const scripts = scriptsByAgent({
  worker: {
    instructions: 'You work.',
    steps: [
      callTools([call('w1', 'add', { a: 2, b: 3 }), call('w2', 'explode')]),
      callTools([call('w3', 'clerk', { input: 'file it' })]),
      callTools([call('w4', 'transfer_to_closer', { reason: 'done here' })]),
    ],
  },
  clerk: { instructions: 'You file things.', steps: [reply('filed')] },
  closer: {
    instructions: 'You close cases.',
    steps: [reply(['All ', 'closed', '.'], { firstChunkDelayMs: 2500, chunkDelayMs: 200 })],
  },
  gated: {
    instructions: 'You ask first.',
    steps: [
      callTools([call('g1', 'add', { a: 1, b: 1 }), call('g2', 'add', { a: 2, b: 2 })]),
      callTools([call('g3', 'add', { a: 3, b: 3 })]),
      // The third call waits for the budget's extension.
      callTools([call('g4', 'wait', { seconds: 60 })]),
    ],
  },
});
const reader = pageReader(14, 4);
/** The reader's requests (and their summaries) go to the page reader; the rest to each agent's script. */
const responder: Responder = (body, index) => {
  const system = JSON.stringify(body.messages[0] ?? '');
  return system.includes('You read reports.') || isSummaryCall(body)
    ? reader(body, index)
    : scripts.responder(body, index);
};

const it = testWithWorld({
  agents,
  tools: [addTool, waitTool, explode, ...pageTools],
  fake: { responder, windowTokens: 12_000 },
});

/** Every event the run's log holds (the client's own paging). */
const allEvents = async (run: RunHandle): Promise<RunEvent[]> => (await run.allEvents()).events;

function invalid(validate: typeof validRunEvent, message: unknown): string | null {
  return validate(message)
    ? null
    : `${JSON.stringify(message).slice(0, 300)}: ${ajv.errorsText(validate.errors?.slice(0, 3))}`;
}

describe('the event protocol, as real runs emit it', () => {
  it('validates every run event and stream event against the published schemas', async ({ world }) => {
    const runEvents: RunEvent[] = [];
    const streamEvents: StreamEvent[] = [];
    // Tools (a result, an error, a custom event), a sub-agent, a handoff, streamed tokens: followed live.
    const worker = await world.client.start({ agent: 'worker', input: 'work' });
    const followed = followRun(worker, {
      event: (event) => runEvents.push(event),
      chunk: (event) => streamEvents.push(event),
    });
    // Approvals (one approved, one rejected), a message, a refused signal, a budget that waits and is extended, an abort.
    const gated = await world.client.start({
      agent: 'gated',
      input: 'ask',
      budget: { max_llm_calls: 2, on_exhausted: 'ask' },
    });
    await awaitingApproval(gated, ['g1', 'g2']);
    await gated.submitUserMessage('a note while you wait');
    await gated.workflow.signal(userMessageSignal, { content: '' });
    await gated.approve('g1');
    await gated.reject('g2', 'not this one');
    await awaitingApproval(gated, ['g3']);
    await gated.approve('g3');
    await eventOf(gated, 'budget_exhausted');
    await gated.extendBudget({ llm_calls: 2 });
    await awaitingApproval(gated, ['g4']);
    await gated.abort('enough');
    // A compaction: the reader's pages pass the window.
    const read = await world.client.start({ agent: 'reader', input: 'Read the report, one page per call.' });

    expect((await followed).status).toBe('completed');
    expect((await gated.result()).status).toBe('aborted');
    expect((await read.result()).status).toBe('completed');
    runEvents.push(...(await allEvents(gated)), ...(await allEvents(read)));
    // Each call's stream as the worker's endpoint serves it, end markers included.
    const calls = runEvents.filter(
      (event) => event.run_id === worker.workflowId && event.event_type === 'llm_call_end',
    );
    const served = new AbortController();
    setTimeout(() => served.abort(), 5000);
    for await (const event of readChunks(
      { url: world.worker.streamUrl, token: world.worker.streamToken(worker.workflowId) },
      worker.workflowId,
      { llm_call: 1, chunk_index: 0 },
      served.signal,
    )) {
      streamEvents.push(event);
      if (event.event_type === 'llm_stream_end' && event.llm_call === calls.length) break;
    }
    served.abort();

    expect(runEvents.map((event) => invalid(validRunEvent, event)).filter(Boolean)).toEqual([]);
    expect(streamEvents.map((event) => invalid(validStreamEvent, event)).filter(Boolean)).toEqual([]);
    const seen = new Set([...runEvents, ...streamEvents].map((event) => event.event_type));
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        'agent_handoff',
        'approval_decided',
        'approval_requested',
        'budget_exhausted',
        'budget_extended',
        'context_compaction_end',
        'context_compaction_start',
        'custom_event',
        'input_rejected',
        'llm_call_end',
        'llm_call_start',
        'llm_chunk_arrive',
        'llm_stream_end',
        'react_end',
        'react_iteration_end',
        'react_iteration_start',
        'react_start',
        'subagent_finished',
        'subagent_started',
        'tool_call_end',
        'tool_call_error',
        'tool_call_start',
        'tool_calls_batch_end',
        'tool_calls_batch_start',
        'user_message_received',
      ]),
    );
    // The child's events came through the parent's follower, each with its own origin.
    expect(
      runEvents.some((event) => event.origin.parent_agent_call_id === worker.workflowId && event.func_name === 'clerk'),
    ).toBe(true);
    console.log(
      `event protocol: ${runEvents.length} run events and ${streamEvents.length} stream events of ${seen.size} types valid`,
    );
    scripts.assertDone();
  });
});
