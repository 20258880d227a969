import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  predictRequest,
  RequestCache,
  type HeldRequest,
  type LoadedRequest,
} from '../../src/activities/request-source';
import { compileContext, compileRequestMessages, type Message, type Mutation } from '../../src/context';
import {
  AgentSpec,
  promptContractFor,
  providerTools,
  requestFields,
  RequestWriter,
  seedTranscript,
  type RequestText,
} from '../../src/runtime';
import { addTool } from '../../src/tools/examples';

const held = (text: string) => ({ text, stable: text.length, hashAtStable: createHash('sha256').update(text) });
const loaded = (text: string): LoadedRequest => ({
  request: { model: 'm', messages: [], stream: true } as unknown as LoadedRequest['request'],
  text,
  chars: text.length,
  charsRead: text.length,
});

describe('the LLM activity cache', () => {
  const hold = (cache: RequestCache, run: string, text: string, digest = `digest-${text}`) =>
    cache.hold(run, digest, held(text), loaded(text));

  it('keeps each run its last request text, the least recently used going first past the bound', () => {
    const cache = new RequestCache(100);
    hold(cache, 'a', 'a'.repeat(40));
    hold(cache, 'b', 'b'.repeat(40));
    expect(cache.heldFor('a')?.text).toBe('a'.repeat(40));
    // 'b' is now the least recently used: it goes when 'c' needs the room.
    hold(cache, 'c', 'c'.repeat(40));
    expect(cache.heldFor('b')).toBeUndefined();
    expect(cache.heldFor('a')).toBeDefined();
    expect(cache.heldFor('c')).toBeDefined();
    // A run's newer text replaces its older one and is counted once.
    hold(cache, 'a', 'A'.repeat(50));
    expect(cache.heldFor('a')?.text).toBe('A'.repeat(50));
    expect(cache.heldFor('c')).toBeDefined();
  });

  it('keeps a text larger than the bound alone', () => {
    const cache = new RequestCache(100);
    hold(cache, 'a', 'a'.repeat(60));
    hold(cache, 'big', 'x'.repeat(500));
    expect(cache.heldFor('a')).toBeUndefined();
    expect(cache.heldFor('big')?.text).toHaveLength(500);
  });

  it('gives a retried call its run’s last request by digest, and nothing for an older or another run’s', () => {
    const cache = new RequestCache();
    hold(cache, 'a', 'first', 'd1');
    expect(cache.loaded('a', 'd1')?.text).toBe('first');
    hold(cache, 'a', 'second', 'd2');
    expect(cache.loaded('a', 'd1')).toBeUndefined();
    expect(cache.loaded('a', 'd2')?.text).toBe('second');
    expect(cache.loaded('b', 'd2')).toBeUndefined();
  });

  it('counts a request it had to parse twice: its text and its parsed messages', () => {
    const cache = new RequestCache(100);
    cache.hold('parsed', 'd', held('p'.repeat(40)), { ...loaded('p'.repeat(40)), text: undefined });
    hold(cache, 'b', 'b'.repeat(30));
    // 80 + 30 is over the bound: the parsed one, held longest ago, goes.
    expect(cache.heldFor('parsed')).toBeUndefined();
    expect(cache.heldFor('b')).toBeDefined();
  });
});

describe('the next request, predicted from the last one', () => {
  const agent = AgentSpec.parse({
    name: 'adder',
    instructions: 'You add.',
    model: 'm',
    tools: ['add'],
    tool_descriptors: [addTool.descriptor],
  });
  const contract = promptContractFor(agent);
  // As the workflow builds, writes and commits them (llm-step.ts, run-state.ts).
  const build = (transcript: Message[]) => ({
    model: agent.model,
    messages: compileRequestMessages(contract, transcript, null),
    tools: providerTools(agent),
    stream: true,
    stream_options: { include_usage: true },
  });
  const holding = (text: RequestText): HeldRequest => ({
    text: text.text,
    stable: text.stable,
    messagesAt: text.messagesAt,
    hashAtStable: createHash('sha256').update(text.text.slice(0, text.stable), 'utf8'),
  });
  const toolCall = (id: string): Mutation[] => [
    {
      type: 'AssistantMessageMutation',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } }],
    },
  ];
  const result = (id: string, content: string): Mutation[] => [
    { type: 'ToolResultMutation', tool_call_id: id, content },
  ];

  it('is the held request plus the reply and results this worker returned: the workflow’s text, byte for byte', () => {
    const writer = new RequestWriter();
    let transcript = seedTranscript(agent.instructions, [], 'add 2 and 3, twice, é 😀');
    let held = holding(writer.write(build(transcript)));
    for (const id of ['c1', 'c2', 'c3']) {
      const since = [...toolCall(id), ...result(id, `"5 ${'x'.repeat(4096)} ü"`)];
      transcript = compileContext(transcript, since, false, true).transcript;
      const next = writer.write(build(transcript));
      const predicted = predictRequest(held, since, next.digest);
      expect(predicted?.text).toBe(next.text);
      expect(predicted?.stable).toBe(next.stable);
      expect(predicted && requestFields(predicted.text, predicted.stable, predicted.messagesAt!)).toEqual({
        ...build([]),
        messages: [],
      });
      held = predicted!;
    }
  });

  it('is refused when anything else changed: a user message the workflow folded in, other results', () => {
    const writer = new RequestWriter();
    const transcript = seedTranscript(agent.instructions, [], 'add');
    const held = holding(writer.write(build(transcript)));
    const since = [...toolCall('c1'), ...result('c1', '5')];
    const withMessage = compileContext(
      transcript,
      [...since, { type: 'UserMessageMutation', message: { role: 'user', content: 'and then?' } }],
      false,
      true,
    ).transcript;
    expect(predictRequest(held, since, writer.write(build(withMessage)).digest)).toBeNull();
    const other = compileContext(transcript, [...toolCall('c1'), ...result('c1', '6')], false, true).transcript;
    expect(predictRequest(held, since, new RequestWriter().write(build(other)).digest)).toBeNull();
    // Results without their call do not apply: no prediction, no error.
    expect(predictRequest(held, result('c9', '5'), 'digest')).toBeNull();
  });
});
