import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import { startWorld, type TestWorld } from '../support/temporal';

/** What zod itself produces for a tool's input, minus the `$schema` marker. */
function zodInputSchema(schema: z.ZodType) {
  const { $schema: _marker, ...rest } = z.toJSONSchema(schema, { io: 'input' });
  return rest;
}

let world: TestWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('agentRun on a real dev server', () => {
  it('runs a tool and answers: transcript, usage and the exact requests the model received', async () => {
    world = await startWorld({
      fake: {
        script: [
          callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }], { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }),
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
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } }] },
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
    expect(first!.messages[0]!['content']).toMatch(/^<tool_best_practices>[\s\S]*<tool name="add">[\s\S]*<must_principles>[\s\S]*<\/must_principles>$/);
    expect(second!.messages.slice(1)).toEqual(result.transcript.slice(1, 4));
    world.fake.assertDone();
  });
});
