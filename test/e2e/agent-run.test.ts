import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { RunFailedError } from '../../src/client/patchloop-client';
import { toolStepErrorContent, validateToolLinkage, type Message } from '../../src/context';
import { callTools, failWith, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { repeatTool } from '../../src/tools/examples';
import { eventOf, recordHistory } from '../support/wait';
import { followRun, type FollowOutput } from '../../src/client/follow';

/** What zod itself produces for a tool's input, minus the `$schema` marker. */
function zodInputSchema(schema: z.ZodType) {
  const { $schema: _marker, ...rest } = z.toJSONSchema(schema, { io: 'input' });
  return rest;
}

function expectEveryCallAnsweredOnce(transcript: Message[]): void {
  validateToolLinkage(transcript);
  const ids = transcript.flatMap((m) =>
    Array.isArray(m['tool_calls']) ? (m['tool_calls'] as Array<{ id: string }>).map((c) => c.id) : [],
  );
  const results = transcript.flatMap((m) => (m['role'] === 'tool' ? [m['tool_call_id']] : []));
  expect([...results].sort()).toEqual([...ids].sort());
}

describe('agentRun on a real dev server', () => {
  it('runs a tool and answers: transcript, usage and the exact requests the model received', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }], {
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          }),
          reply(['The sum ', 'is 5.'], { usage: { prompt_tokens: 20, completion_tokens: 4, total_tokens: 24 } }),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'What is 2 + 3?' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('The sum is 5.');
    expect(result.usage).toEqual({ prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 });
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'What is 2 + 3?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '5' },
      { role: 'assistant', content: 'The sum is 5.' },
    ]);
    validateToolLinkage(result.transcript);
    const [first, second] = world.fake.requests.map((request) => request.body);
    expect(first!.model).toBe('fake-model');
    expect(first!.stream).toBe(true);
    expect(first!.tools).toContainEqual({
      type: 'function',
      function: {
        name: 'add',
        description: 'Add two numbers and return the sum.',
        parameters: zodInputSchema(z.object({ a: z.number(), b: z.number() })),
      },
    });
    expect(first!.messages[0]!['content']).toMatch(
      /^<tool_best_practices>[\s\S]*<tool name="add">[\s\S]*<must_principles>[\s\S]*<\/must_principles>$/,
    );
    expect(second!.messages.slice(1)).toEqual(result.transcript.slice(1, 4));
    world.fake.assertDone();
    await recordHistory(run, 'tool-happy-path');
  });

  it('a follower asks the run for its events when a workflow task completed, not on a timer (each query is billed)', async ({
    startWorld,
  }) => {
    // A model call of about 3 s (30 chunks, 100 ms apart): a follower asking every 150 ms asked ~20 times.
    const text = Array.from({ length: 30 }, (_, index) => `word${index} `);
    const world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }]),
          reply(text, { chunkDelayMs: 100 }),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'What is 2 + 3?' });
    const asked: string[] = [];
    const query = run.workflow.query.bind(run.workflow);
    // Counts the questions the follower puts to the run; each still goes to the real worker.
    run.workflow.query = ((definition: unknown, ...args: unknown[]) => {
      asked.push(typeof definition === 'string' ? definition : (definition as { name: string }).name);
      return (query as (...all: unknown[]) => Promise<unknown>)(definition, ...args);
    }) as typeof run.workflow.query;
    const events: string[] = [];
    const output: FollowOutput = { event: (event) => events.push(event.event_type), chunk: () => undefined };
    const result = await followRun(run, output);
    expect(result.answer).toBe(text.join(''));
    expect(events[0]).toBe('react_start');
    expect(events.at(-1)).toBe('react_end');
    // The run has 3 workflow tasks (its start, and one after each model call; the tool runs in the one
    // after the first): the first question and one after each task (4 here), at most one more when the
    // run ends between; never one per 150 ms (20 before).
    expect(asked.every((name) => name === 'events')).toBe(true);
    expect(asked.length).toBeLessThanOrEqual(6);
    // The shape of 2026-12-06: the agent resolved locally, search attributes from the start, one upsert.
    await recordHistory(run, 'agent-resolved-locally');
  });

  it('runs a parallel batch concurrently and commits results in declared order, not completion order', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([
            { id: 'call_slow', name: 'wait', arguments: '{"seconds": 1}' },
            { id: 'call_fast', name: 'repeat', arguments: '{"text": "ab", "times": 2}' },
          ]),
          reply('done'),
        ],
      },
    });
    const started = Date.now();
    const run = await world.client.start({ agent: 'assistant', input: 'wait and repeat' });
    const result = await run.result();
    expect(result.transcript.slice(3, 5)).toEqual([
      { role: 'tool', tool_call_id: 'call_slow', content: '"waited 1 s"' },
      { role: 'tool', tool_call_id: 'call_fast', content: '"abab"' },
    ]);
    const ends = (await run.status()).events
      .filter((event) => event.event_type === 'tool_call_end')
      .map((event) => ('tool_call_id' in event ? event.tool_call_id : ''));
    expect(ends).toEqual(['call_fast', 'call_slow']);
    expect(Date.now() - started).toBeLessThan(10_000);
    world.fake.assertDone();
    await recordHistory(run, 'parallel-batch');
  });

  it('folds a user message sent mid-run into the next compile boundary', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [callTools([{ id: 'call_1', name: 'wait', arguments: '{"seconds": 1.5}' }]), reply('ok, and hi')],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'wait a bit' });
    await eventOf(run, 'tool_call_start');
    await run.sendUserMessage('also say hi');
    const result = await run.result();
    expect(result.status).toBe('completed');
    const secondRequest = world.fake.requests[1]!.body.messages;
    expect(secondRequest.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: '"waited 1.5 s"' },
      { role: 'user', content: 'also say hi' },
    ]);
    expect(result.transcript.at(-2)).toEqual({ role: 'user', content: 'also say hi' });
    world.fake.assertDone();
    await recordHistory(run, 'user-message');
  });

  it('does not drop a message that arrives while the model writes its final answer', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [reply(['first ', 'answer'], { chunkDelayMs: 400 }), reply('second answer')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'hello' });
    await world.fake.waitForRequests(1);
    await run.sendUserMessage('one more thing');
    const result = await run.result();
    expect(result.answer).toBe('second answer');
    expect(result.transcript.slice(1).map((m) => m['content'])).toEqual([
      'hello',
      'first answer',
      'one more thing',
      'second answer',
    ]);
    world.fake.assertDone();
  });

  it('retries a 429 after the provider retry-after, then succeeds', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [failWith(429, { headers: { 'retry-after': '2' } }), reply('after the limit')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'hi' });
    const result = await run.result();
    expect(result.answer).toBe('after the limit');
    const [first, second] = world.fake.requests;
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1900);
    world.fake.assertDone();
    await recordHistory(run, 'rate-limit-retry');
  });

  it('retries a 500 and a connection dropped mid-stream; the partial stream never reaches the transcript', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [failWith(500), { kind: 'drop', chunks: ['par', 'tial'] }, reply('whole answer')] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'hi' });
    const result = await run.result();
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'whole answer' },
    ]);
    world.fake.assertDone();
  });

  it('fails at once, readably, when the provider rejects the credentials (401)', async ({ startWorld }) => {
    const world = await startWorld({ fake: { script: [failWith(401, { message: 'Incorrect API key provided' })] } });
    const run = await world.client.start({ agent: 'assistant', input: 'hi' });
    const error = await run.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('ProviderAuthFailed');
    expect((error as Error).message).toContain('provider refused the credentials (401): Incorrect API key provided');
    expect((error as Error).message).not.toMatch(/\n\s+at /);
    expect(world.fake.requests).toHaveLength(1);
    expect((await run.status()).state).toBe('failed');
  });

  it('gives malformed arguments, schema violations and unknown tools back to the model as errors, and goes on', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([
            { id: 'call_bad_json', name: 'add', arguments: '{"a": 2, "b": ' },
            { id: 'call_bad_type', name: 'add', arguments: '{"a": 2, "b": "three"}' },
            { id: 'call_unknown', name: 'launch_rockets', arguments: '{}' },
            { id: 'call_repaired', name: 'add', arguments: '{"a": 1, "b": 1' },
          ]),
          reply('I see errors'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'break things' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const results = Object.fromEntries(
      result.transcript
        .filter((m) => m['role'] === 'tool')
        .map((m) => [m['tool_call_id'], JSON.parse(m['content'] as string)]),
    );
    expect(results['call_bad_json']).toEqual({
      error:
        'Tool \'add\' failed during execution or result parsing with arguments {"a": 2, "b":: Tool arguments are not a valid JSON object',
    });
    expect(results['call_bad_type'].error).toMatch(
      /^Tool 'add' failed during execution or result parsing with arguments \{"a": 2, "b": "three"\}: invalid arguments: .*b/,
    );
    expect(results['call_unknown']).toEqual({ error: "Tool 'launch_rockets' was not found" });
    expect(results['call_repaired']).toBe(2);
    expectEveryCallAnsweredOnce(result.transcript);
    expect(world.fake.requests[1]!.body.messages.filter((m) => m['role'] === 'tool')).toHaveLength(4);
    world.fake.assertDone();
    await recordHistory(run, 'malformed-arguments');
  });

  it('gives each tool call an idempotency key, times out slow tools and refuses oversized results, as errors the model sees', async ({
    startWorld,
  }) => {
    const keys: string[] = [];
    const keyed = defineTool({
      name: 'charge',
      description: 'A side-effecting tool.',
      parameters: z.object({ cents: z.number() }),
      execute: ({ cents }, { idempotencyKey }) => {
        keys.push(idempotencyKey);
        return { charged: cents };
      },
    });
    const slow = defineTool({
      name: 'slow',
      description: 'Never finishes.',
      parameters: z.object({}),
      timeoutSeconds: 0.5,
      execute: () => new Promise(() => undefined),
    });
    const world = await startWorld({
      tools: [keyed, slow, repeatTool],
      agents: [{ name: 'assistant', instructions: 'x', tools: ['charge', 'slow', 'repeat'] }],
      fake: {
        script: [
          callTools([
            { id: 'c1', name: 'charge', arguments: '{"cents": 250}' },
            { id: 's1', name: 'slow', arguments: '{}' },
            { id: 'r1', name: 'repeat', arguments: JSON.stringify({ text: '0123456789'.repeat(10), times: 3000 }) },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'go' }, { workflowId: 'keys-run' });
    const result = await run.result();
    expect(keys).toEqual([`keys-run/${(await run.workflow.describe()).runId}/1/c1`]);
    const contents = Object.fromEntries(
      result.transcript.filter((m) => m['role'] === 'tool').map((m) => [m['tool_call_id'], m['content']]),
    );
    expect(contents['c1']).toBe('{\n  "charged": 250\n}');
    // It never stops (its signal ignored), and it is not marked idempotent: it may yet take effect.
    expect(contents['s1']).toBe(
      toolStepErrorContent(
        "Tool 'slow' timed out after 0.5 s and was still running when told to stop, and the tool is not marked idempotent: it may or may not have taken effect. Check before calling it again.",
      ),
    );
    expect(JSON.parse(contents['r1'] as string).error).toMatch(/result is too large: 300002 bytes \(limit 262144\)$/);
    const errors = (await run.status()).events.filter((event) => event.event_type === 'tool_call_error');
    expect(errors.map((event) => ('tool_call_id' in event ? event.tool_call_id : ''))).toEqual(['s1']);
    world.fake.assertDone();
  });

  it('fails invalid run input at once with a readable, non-retryable error', async ({ startWorld }) => {
    const world = await startWorld();
    const started = Date.now();
    const cases: Array<[unknown, RegExp]> = [
      [{ agent: 'assistant' }, /invalid agentRun input: .*input/s],
      [{ agent: 'assistant', input: 'x', max_tool_calls: -1 }, /max_tool_calls/],
      [{ agent: 'assistant', input: 'x', history: [{ role: 'robot', content: 'x' }] }, /history/],
      [
        {
          agent: 'assistant',
          input: 'x',
          history: [
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{}' } }],
            },
          ],
        },
        /history: Pending assistant tool_calls/,
      ],
      [{ agent: 'assistant', input: 'x', surprise: true }, /surprise/],
    ];
    for (const [input, message] of cases) {
      const handle = await world.client.temporal.workflow.start('agentRun', {
        taskQueue: world.config.taskQueue,
        workflowId: `invalid-${Math.random()}`,
        args: [input],
      });
      const error = (await handle.result().catch((e: unknown) => e)) as { cause?: { type?: string; message?: string } };
      expect(error.cause?.type).toBe('InvalidRunInput');
      expect(error.cause?.message).toMatch(message);
    }
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(world.fake.requests).toHaveLength(0);
  });

  it('fails a run for an unknown agent with the names the worker serves', async ({ startWorld }) => {
    const world = await startWorld();
    const run = await world.client.start({ agent: 'nobody', input: 'x' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error.type).toBe('UnknownAgent');
    expect(error.message).toContain("unknown agent 'nobody'; this worker serves: assistant");
  });

  it('on the tool budget, drops the batch and makes one last call without tools (spec 7.5)', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          callTools([
            { id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' },
            { id: 'c2', name: 'add', arguments: '{"a": 3, "b": 4}' },
          ]),
          reply('no tools left'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'add twice', max_tool_calls: 1 });
    const result = await run.result();
    expect(result.answer).toBe('no tools left');
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'add twice' },
      { role: 'assistant', content: 'no tools left' },
    ]);
    const last = world.fake.requests[1]!.body;
    expect(last.stream).toBe(false);
    expect(last.tools).toBeUndefined();
    world.fake.assertDone();
  });
});
