import { type ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { classifyProviderError } from '../../src/activities/provider-errors';
import { ReasoningMemory } from '../../src/activities/reasoning-memory';
import { responseReply, ResponsesStreamReader, type ResponsesEvent } from '../../src/activities/responses-reading';
import { responsesBody } from '../../src/activities/responses-request';
import { StreamAccumulator, type ArgumentsDelta } from '../../src/activities/stream-accumulator';
import type { LlmRequest } from '../../src/runtime';

const reasoning = {
  id: 'rs_1',
  type: 'reasoning',
  summary: [{ type: 'summary_text', text: 'Add first.' }],
  encrypted_content: 'gAAAA-opaque==',
};
const call = { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } };

/** A tool loop as the workflow compiles it: system, user, a call with reasoning, its result, the answer. */
const request = {
  model: 'gpt-test',
  messages: [
    { role: 'system', content: 'You add numbers.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'add 1 and 2, see ' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
    },
    {
      role: 'assistant',
      content: null,
      tool_calls: [call],
      // A Responses reasoning item goes back; another provider's reasoning block has no form here.
      reasoning_details: [reasoning, { type: 'reasoning.encrypted', data: 'openrouter' }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '3' },
    { role: 'assistant', content: 'It is 3.' },
    { role: 'user', content: 'thanks' },
  ],
  tools: [
    {
      type: 'function',
      function: { name: 'add', description: 'Adds.', parameters: { type: 'object', properties: {} } },
    },
  ],
  tool_choice: { type: 'function', function: { name: 'add' } },
  max_tokens: 500,
  temperature: 0.2,
  stream: true,
  stream_options: { include_usage: true },
} as unknown as LlmRequest;

describe('Responses API: the compiled request on the wire', () => {
  it('translates a whole tool loop: items in place, reasoning before its calls, flat tools, no chat-only fields', () => {
    expect(responsesBody(request)).toEqual({
      model: 'gpt-test',
      input: [
        { type: 'message', role: 'system', content: 'You add numbers.' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'add 1 and 2, see ' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' },
          ],
        },
        reasoning,
        { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
        { type: 'function_call_output', call_id: 'call_1', output: '3' },
        { type: 'message', role: 'assistant', content: 'It is 3.' },
        { type: 'message', role: 'user', content: 'thanks' },
      ],
      temperature: 0.2,
      tools: [
        {
          type: 'function',
          name: 'add',
          description: 'Adds.',
          parameters: { type: 'object', properties: {} },
          strict: false,
        },
      ],
      tool_choice: { type: 'function', name: 'add' },
      max_output_tokens: 500,
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    // The reasoning item is the very object the provider sent (nothing added, nothing dropped).
    const sent = responsesBody(request)['input'] as unknown[];
    expect(JSON.stringify(sent[2])).toBe(JSON.stringify(reasoning));
  });

  it('asks for encrypted reasoning only when reasoning is asked for; chat-only options fail before sending', () => {
    const plain = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: false };
    expect(responsesBody(plain as unknown as LlmRequest)).not.toHaveProperty('include');
    const reasoning = responsesBody({ ...plain, reasoning_effort: 'high' } as unknown as LlmRequest);
    expect(reasoning).toMatchObject({ reasoning: { effort: 'high' }, include: ['reasoning.encrypted_content'] });
    expect(reasoning).not.toHaveProperty('reasoning_effort');
    expect(() => responsesBody({ ...plain, seed: 7, stop: ['x'] } as unknown as LlmRequest)).toThrow(
      'the Responses API has no stop, seed',
    );
    // A reasoning item without its encrypted content names nothing a store: false provider kept: not sent.
    const unsealed = { type: 'reasoning', id: 'rs_9', summary: [] };
    const withUnsealed = responsesBody({
      ...plain,
      messages: [{ role: 'assistant', content: null, tool_calls: [call], reasoning_details: [unsealed] }],
    } as unknown as LlmRequest);
    expect(withUnsealed['input']).toEqual([
      { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
    ]);
  });

  it('keeps an assistant text beside its calls, maps response_format and a plain tool_choice', () => {
    const body = responsesBody({
      model: 'm',
      messages: [{ role: 'assistant', content: 'Let me add.', tool_calls: [call] }],
      tool_choice: 'required',
      max_completion_tokens: 9,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' } } },
      stream: false,
    } as unknown as LlmRequest);
    expect(body['input']).toEqual([
      { type: 'message', role: 'assistant', content: 'Let me add.' },
      { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
    ]);
    expect(body['tool_choice']).toBe('required');
    expect(body['max_output_tokens']).toBe(9);
    expect(body['text']).toEqual({ format: { type: 'json_schema', name: 'out', schema: { type: 'object' } } });
    expect(body).not.toHaveProperty('response_format');
  });

  it('refuses what the Responses API cannot take, by message, without sending it', () => {
    const audio = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] }],
      stream: false,
    } as unknown as LlmRequest;
    const error = (() => {
      try {
        responsesBody(audio);
      } catch (thrown) {
        return thrown as ApplicationFailure;
      }
      throw new Error('expected a failure');
    })();
    expect(error.type).toBe('InvalidLlmRequest');
    expect(error.message).toBe(
      'message 0 cannot be sent to the Responses API: a content part of type "input_audio" has no Responses API form',
    );
  });
});

/** Events as OpenAI streams them for a reply with reasoning, a sentence and a function call. */
const events: ResponsesEvent[] = [
  { type: 'response.created', response: { status: 'in_progress', output: [] } },
  { type: 'response.output_item.added', output_index: 0, item: { ...reasoning, summary: [] } },
  { type: 'response.output_item.done', output_index: 0, item: reasoning },
  { type: 'response.output_item.added', output_index: 1, item: { type: 'message', content: [] } },
  { type: 'response.output_text.delta', output_index: 1, delta: 'Adding ' },
  { type: 'response.output_text.delta', output_index: 1, delta: 'now.' },
  {
    type: 'response.output_item.done',
    output_index: 1,
    item: { type: 'message', content: [{ type: 'output_text', text: 'Adding now.' }] },
  },
  {
    type: 'response.output_item.added',
    output_index: 2,
    item: { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '' },
  },
  { type: 'response.function_call_arguments.delta', output_index: 2, delta: '{"a":1,' },
  { type: 'response.function_call_arguments.delta', output_index: 2, delta: '"b":2}' },
  {
    type: 'response.output_item.done',
    output_index: 2,
    item: { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
  },
  {
    type: 'response.completed',
    response: {
      status: 'completed',
      usage: { input_tokens: 120, output_tokens: 30, total_tokens: 150, input_tokens_details: { cached_tokens: 100 } },
    },
  },
];

function read(list: ResponsesEvent[]) {
  const texts: string[] = [];
  const deltas: ArgumentsDelta[] = [];
  const stream = new StreamAccumulator(
    (text) => texts.push(text),
    (delta) => deltas.push(delta),
  );
  const reader = new ResponsesStreamReader(stream);
  for (const event of list) reader.add(event);
  return { stream, reader, texts, deltas };
}

function thrownBy(list: ResponsesEvent[]): ApplicationFailure {
  try {
    read(list);
  } catch (error) {
    return classifyProviderError(error);
  }
  throw new Error('expected the stream to fail');
}

describe('Responses API: reading a stream', () => {
  it('text deltas are chunks, calls are tool calls with argument deltas, reasoning is kept whole, usage counts', () => {
    const { stream, reader, texts, deltas } = read(events);
    expect(reader.ended).toBe(true);
    expect(texts).toEqual(['Adding ', 'now.']);
    expect(stream.content).toBe('Adding now.');
    expect(stream.toolCalls()).toEqual([call]);
    expect(deltas.map((delta) => [delta.argname, delta.argcontent_delta])).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    expect(stream.reasoningDetails).toEqual([reasoning]);
    expect(stream.usage).toEqual({
      prompt_tokens: 120,
      completion_tokens: 30,
      total_tokens: 150,
      cached_prompt_tokens: 100,
    });
    expect(stream.finishReason).toBe('tool_calls');
  });

  it('a server that sends items only when done (no deltas) gives the same reply', () => {
    const quiet = events.filter((event) => !event.type.endsWith('.delta'));
    const { stream, texts } = read(quiet);
    expect(texts).toEqual(['Adding now.']);
    expect(stream.toolCalls()).toEqual([call]);
  });

  it('is incomplete until the last event; response.incomplete ends it with its reason', () => {
    expect(read(events.slice(0, -1)).reader.ended).toBe(false);
    const cut = read([
      ...events.slice(3, 6),
      {
        type: 'response.incomplete',
        response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
      },
    ]);
    expect(cut.reader.ended).toBe(true);
    expect(cut.stream.finishReason).toBe('length');
    expect(cut.stream.content).toBe('Adding now.');
  });

  it('classifies error events and failed responses like errors inside a chat stream', () => {
    const overloaded = thrownBy([{ type: 'error', code: 'server_error', message: 'overloaded' }]);
    expect([overloaded.type, overloaded.nonRetryable]).toEqual(['ProviderUnavailable', false]);
    const long = thrownBy([{ type: 'error', code: 'context_length_exceeded', message: 'too long' }]);
    expect(long.type).toBe('ContextTooLong');
    const invalid = thrownBy([
      { type: 'response.failed', response: { status: 'failed', error: { code: 'invalid_prompt', message: 'no' } } },
    ]);
    expect([invalid.type, invalid.nonRetryable]).toEqual(['ProviderRejected', true]);
  });
});

describe('Responses API: a reply as a whole', () => {
  it('reads output items in order, as the provider gave them', () => {
    const reply = responseReply({
      status: 'completed',
      output: [
        reasoning,
        { type: 'message', content: [{ type: 'output_text', text: 'Adding now.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
      ],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7, input_tokens_details: { cached_tokens: 0 } },
    });
    expect(reply).toEqual({
      content: 'Adding now.',
      toolCalls: [call],
      reasoningDetails: [reasoning],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      finishReason: 'tool_calls',
      streamed: false,
    });
  });

  it('a response that is not finished is incomplete (retried); a failed one is the provider error', () => {
    expect(() => responseReply({ status: 'in_progress', output: [] })).toThrow(
      `the provider's reply is incomplete: the response's status is "in_progress"`,
    );
    expect(() => responseReply({ status: 'failed', error: { code: 'server_error', message: 'boom' } })).toThrow('boom');
  });
});

describe('Responses API: reasoning kept for the next turn', () => {
  it('puts a reply’s reasoning items back on its assistant message, for that workflow only', () => {
    const memory = new ReasoningMemory();
    memory.remember('wf-1', [call], [reasoning]);
    const next = { model: 'm', stream: true, messages: [{ role: 'assistant', content: null, tool_calls: [call] }] };
    expect(memory.restore('wf-1', next as LlmRequest).messages[0]).toEqual({
      ...next.messages[0],
      reasoning_details: [reasoning],
    });
    expect(memory.restore('wf-2', next as LlmRequest)).toBe(next);
  });

  it('forgets the least recently used beyond its size', () => {
    const memory = new ReasoningMemory(JSON.stringify([reasoning]).length * 2);
    for (const id of ['a', 'b', 'c']) memory.remember('wf', [{ ...call, id }], [reasoning]);
    const with_ = (id: string) =>
      memory.restore('wf', {
        model: 'm',
        stream: true,
        messages: [{ role: 'assistant', content: null, tool_calls: [{ ...call, id }] }],
      } as LlmRequest).messages[0]!['reasoning_details'];
    expect(with_('a')).toBeUndefined();
    expect(with_('b')).toEqual([reasoning]);
    expect(with_('c')).toEqual([reasoning]);
  });
});
