import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { RunFailedError } from '../../src/client/patchloop-client';
import { reply } from '../../src/fake-model/steps';
import { classifySentiment, summarize } from '../../src/functions/examples';
import { recordHistory } from '../support/wait';

describe('typed LLM functions (workflow llmFunction)', () => {
  it('sends the rendered prompt with the output schema as structured output and returns the typed value', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [reply('{"summary": "Cats nap.", "keywords": ["cats", "naps"]}')] },
    });
    const output = await world.client.call(summarize, { text: 'Cats sleep a lot during the day.', words: 5 });
    // The inferred type: { summary: string; keywords: string[] }.
    const keywords: string[] = output.keywords;
    expect(output).toEqual({ summary: 'Cats nap.', keywords: ['cats', 'naps'] });
    expect(keywords).toHaveLength(2);
    const body = world.fake.requests[0]!.body;
    const { $schema: _marker, ...schema } = z.toJSONSchema(summarize.definition.output, { io: 'input' });
    expect(body['response_format']).toEqual({ type: 'json_schema', json_schema: { name: 'summarize', schema } });
    expect(body.messages).toEqual([
      {
        role: 'system',
        content:
          'Summarize the following text in at most 5 words and list up to five keywords.\n\nText:\nCats sleep a lot during the day.',
      },
      {
        role: 'user',
        content:
          'Input:\n{\n  "text": "Cats sleep a lot during the day.",\n  "words": 5\n}\n\nReply with only a JSON value that matches the output schema.',
      },
    ]);
    world.fake.assertDone();
  });

  it('sends an invalid reply back with the validation error, then returns the repaired output', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          reply('I think it is positive!'),
          reply('{"sentiment": "happy", "confidence": 2}'),
          reply('{"sentiment": "positive", "confidence": 0.9}'),
        ],
      },
    });
    const handle = await world.client.temporal.workflow.start('llmFunction', {
      taskQueue: world.config.taskQueue,
      workflowId: `fn-${Math.random()}`,
      args: [{ function: 'classify_sentiment', args: { text: 'I love it' } }],
    });
    expect(await handle.result()).toEqual({ sentiment: 'positive', confidence: 0.9 });
    const second = world.fake.requests[1]!.body.messages;
    expect(second.at(-2)).toEqual({ role: 'assistant', content: 'I think it is positive!' });
    expect(String(second.at(-1)!['content'])).toMatch(/^Your reply was rejected: the reply is not JSON/);
    const third = world.fake.requests[2]!.body.messages;
    expect(String(third.at(-1)!['content'])).toMatch(
      /^Your reply was rejected: the reply does not match the output schema: .*sentiment/,
    );
    world.fake.assertDone();
    await recordHistory(world.client.run(handle.workflowId), 'llm-function-repair');
  });

  it('fails readably and non-retryably when repairs are exhausted, with the last raw output', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [reply('nope'), reply('still nope'), reply('{"sentiment": "meh"}')] },
    });
    const error = (await world.client
      .call(classifySentiment, { text: 'hm' })
      .catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('InvalidFunctionOutput');
    expect(error.message).toContain("function 'classify_sentiment' returned invalid output 3 time(s)");
    expect(error.message).toContain('Last raw output: "{\\"sentiment\\": \\"meh\\"}"');
    world.fake.assertDone();
  });

  it('rejects arguments that do not match the input schema before calling the model', async ({ startWorld }) => {
    const world = await startWorld();
    const error = (await world.client
      .runFunction('summarize', { text: '' })
      .catch((e: unknown) => e)) as RunFailedError;
    expect(error.type).toBe('InvalidFunctionArgs');
    expect(error.message).toContain("invalid arguments for function 'summarize'");
    const unknown = (await world.client.runFunction('nope', {}).catch((e: unknown) => e)) as RunFailedError;
    expect(unknown.type).toBe('UnknownFunction');
    expect(world.fake.requests).toHaveLength(0);
  });
});
