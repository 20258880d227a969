import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { followRun, type FollowOutput } from '../../src/client/follow';
import { validateToolLinkage } from '../../src/context';
import { callTools, failWith, reply, type FakeStep } from '../../src/fake-model/steps';
import type { StreamEvent } from '../../src/streaming/chunk';
import { addTool } from '../../src/tools/examples';
import { replyReceived } from '../support/wait';

/** An agent on the Responses API; everything else is the worker's provider (the fake model). */
/** A reasoning model's agent: reasoning_effort asks for reasoning, so its encrypted content travels. */
const reasoner = {
  name: 'reasoner',
  instructions: 'Add.',
  tools: ['add'],
  provider: { api: 'responses' as const },
  llm_options: { reasoning_effort: 'low' },
};
const sealed = { id: 'rs_1', summary: ['Add the two numbers.'], encrypted_content: 'gAAAA-sealed-reasoning==' };
/** The reasoning item as the fake model sends it, and as it must come back, unchanged. */
const reasoningItem = {
  id: 'rs_1',
  type: 'reasoning',
  summary: [{ type: 'summary_text', text: 'Add the two numbers.' }],
  encrypted_content: 'gAAAA-sealed-reasoning==',
};
const toolLoop = (options: { stream?: boolean } = {}): FakeStep[] => [
  callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 1, "b": 2}' }], {
    reasoning: [sealed],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  }),
  reply(options.stream === false ? 'The sum is 3.' : ['The sum ', 'is 3.'], {
    usage: { prompt_tokens: 20, completion_tokens: 4, total_tokens: 24 },
    // Slow enough for a follower to find the call's token stream while it is live.
    ...(options.stream === false ? {} : { firstChunkDelayMs: 1000, chunkDelayMs: 300 }),
  }),
];
const loopTranscript = [
  { role: 'user', content: 'What is 1 + 2?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a": 1, "b": 2}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '3' },
  { role: 'assistant', content: 'The sum is 3.' },
];

function chunkCollector() {
  const chunks: string[] = [];
  const output: FollowOutput = {
    event: () => undefined,
    chunk: (event: StreamEvent) => {
      if (event.event_type === 'llm_chunk_arrive') chunks.push(event.chunk);
    },
  };
  return { chunks, output };
}

describe('the Responses API (provider api: responses)', () => {
  it('a tool loop: the same transcript, reasoning sent back before its call, tokens streamed, usage summed', async ({
    startWorld,
  }) => {
    const world = await startWorld({ tools: [addTool], agents: [reasoner], fake: { script: toolLoop() } });
    const run = await world.client.start({ agent: 'reasoner', input: 'What is 1 + 2?' });
    const followed = chunkCollector();
    const result = await followRun(run, followed.output);
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('The sum is 3.');
    // The transcript is the one a chat completions run has: no reasoning in it (spec invariant 8).
    expect(result.transcript.slice(1)).toEqual(loopTranscript);
    validateToolLinkage(result.transcript);
    expect(result.usage).toEqual({ prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 });
    // Followers saw the reply's tokens as they came.
    expect(followed.chunks).toEqual(['The sum ', 'is 3.']);

    const requests = world.fake.requests;
    expect(requests.map((request) => request.api)).toEqual(['responses', 'responses']);
    const [first, second] = requests.map((request) => request.body as Record<string, unknown>);
    // The compiled system message (the agent's instructions inside the framework blocks), in place.
    const system = {
      type: 'message',
      role: 'system',
      content: expect.stringMatching(
        /^<tool_best_practices>[\s\S]*<\/tool_best_practices>\n\nAdd\.\n\n<must_principles>/,
      ),
    };
    const user = { type: 'message', role: 'user', content: 'What is 1 + 2?' };
    expect(first).toEqual({
      model: 'fake-model',
      input: [system, user],
      tools: [
        {
          type: 'function',
          name: 'add',
          description: 'Add two numbers and return the sum.',
          parameters: expect.objectContaining({ type: 'object' }),
          strict: false,
        },
      ],
      reasoning: { effort: 'low' },
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    // The reasoning item goes back as it came, in place: before the call it led to and its output.
    expect(second!['input']).toEqual([
      system,
      user,
      reasoningItem,
      { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a": 1, "b": 2}' },
      { type: 'function_call_output', call_id: 'call_1', output: '3' },
    ]);
    expect(JSON.stringify((second!['input'] as unknown[])[2])).toBe(JSON.stringify(reasoningItem));
    world.fake.assertDone();
  });

  it('not streamed: the same transcript and reasoning from whole responses; a 500 is retried', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      tools: [addTool],
      agents: [{ ...reasoner, stream: false }],
      fake: { script: [failWith(500, { message: 'upstream hiccup' }), ...toolLoop({ stream: false })] },
    });
    const run = await world.client.start({ agent: 'reasoner', input: 'What is 1 + 2?' });
    const result = await run.result();
    expect(result.transcript.slice(1)).toEqual(loopTranscript);
    expect(result.usage).toEqual({ prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 });
    const bodies = world.fake.requests.map((request) => request.body as Record<string, unknown>);
    expect(bodies).toHaveLength(3);
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[0]!['stream']).toBe(false);
    expect((bodies[2]!['input'] as unknown[]).slice(2, 4)).toEqual([
      reasoningItem,
      { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a": 1, "b": 2}' },
    ]);
    world.fake.assertDone();
  });

  it('abort while streaming keeps the partial text with the truncation marker', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [{ ...reasoner, tools: [] }],
      fake: { script: [{ kind: 'hang', chunks: ['Transformers ', 'are '], chunkDelayMs: 50 }] },
    });
    const run = await world.client.start({ agent: 'reasoner', input: 'explain transformers' });
    await replyReceived(run, 'Transformers are '.length);
    const abortedAt = Date.now();
    await run.abort('user_interrupt');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.transcript.at(-1)).toEqual({
      role: 'assistant',
      content: 'Transformers are <Truncated due to cancel from user. Reason: user_interrupt>',
    });
    expect(world.fake.requests[0]!.api).toBe('responses');
    expect(world.fake.requests[0]!.abandonedAt).toBeGreaterThanOrEqual(abortedAt);
    world.fake.assertDone();
  });

  const WHOLE = ['The whole ', 'answer, ', 'every word ', 'of it.'];
  it.for([
    ['a stream that ends without response.completed', { kind: 'eof', omit: 'finish_reason' } as const],
    ['a connection reset mid-stream', { kind: 'reset', afterChunks: 5 } as const],
  ] as const)(
    '%s is retried, and nothing of the broken attempt reaches the transcript',
    async ([_name, fault], { startWorld }) => {
      const world = await startWorld({
        agents: [{ ...reasoner, tools: [] }],
        fake: { script: [reply(['The partial ', 'answer, ', 'every word ', 'of it.'], { fault }), reply(WHOLE)] },
      });
      const run = await world.client.start({ agent: 'reasoner', input: 'hi' });
      const result = await run.result();
      expect(result.transcript.slice(1)).toEqual([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'The whole answer, every word of it.' },
      ]);
      expect(JSON.stringify(result.transcript)).not.toContain('partial');
      const [first, second] = world.fake.requests.map((request) => request.body);
      expect(world.fake.requests).toHaveLength(2);
      expect(second).toEqual(first);
      const end = (await run.status()).events.find((event) => event.event_type === 'llm_call_end');
      expect(end).toMatchObject({ outcome: 'completed', content: 'The whole answer, every word of it.' });
      world.fake.assertDone();
    },
  );
});
