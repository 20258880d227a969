import { describe, expect, it } from 'vitest';
import {
  applyMutations,
  compileInvocationTurn,
  ContextError,
  PromptContract,
  type Message,
  type Mutation,
} from '../../src/context';

/** Behaviours the spec cites by vector number where the vector itself is held back (spec README). */

const contract = (fields: Partial<PromptContract> = {}): PromptContract => PromptContract.parse(fields);
const call = (id: string, name = 'lookup') => ({ id, type: 'function', function: { name, arguments: '{}' } });

function errorOf(run: () => unknown): ContextError {
  try {
    run();
  } catch (error) {
    if (error instanceof ContextError) return error;
    throw error;
  }
  throw new Error('expected a ContextError');
}

describe('spec rules behind held-back vectors', () => {
  it('04: an assistant mutation with content "" appends a message', () => {
    expect(
      applyMutations([{ role: 'user', content: 'q' }], [{ type: 'AssistantMessageMutation', content: '' }]),
    ).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '' },
    ]);
    expect(applyMutations([{ role: 'user', content: 'q' }], [{ type: 'AssistantMessageMutation' }])).toEqual([
      { role: 'user', content: 'q' },
    ]);
  });

  it('08: unanswered calls fail with the end-of-list message', () => {
    const error = errorOf(() =>
      applyMutations(
        [{ role: 'user', content: 'q' }],
        [{ type: 'AssistantMessageMutation', content: null, tool_calls: [call('c1')] }],
      ),
    );
    expect(error.message).toBe('Unmatched assistant tool_calls without tool results');
    expect(error.kind).toBe('linkage');
  });

  it('linkage: another role between a call and its result, and a missing role printed as None', () => {
    const pending: Message = { role: 'assistant', content: null, tool_calls: [call('c1')] };
    expect(
      errorOf(() =>
        applyMutations([pending], [{ type: 'UserMessageMutation', message: { role: 'user', content: 'x' } }]),
      ).message,
    ).toBe("Pending assistant tool_calls must be followed by matching tool messages before role 'user' (index 1)");
    expect(
      errorOf(() => applyMutations([pending], [{ type: 'UserMessageMutation', message: { content: 'x' } }])).message,
    ).toBe("Pending assistant tool_calls must be followed by matching tool messages before role 'None' (index 1)");
  });

  it('14: a summary without remembers stays verbatim and system messages other than the first are dropped', () => {
    const transcript: Message[] = [
      { role: 'system', content: 'first', name: 'kept' },
      { role: 'user', content: 'q' },
      { role: 'system', content: 'second' },
    ];
    const summary = { role: 'assistant', content: 'not a parsable summary', extra: 1 };
    expect(applyMutations(transcript, [{ type: 'ContextSummaryMutation', summary_message: summary }])).toEqual([
      transcript[0],
      summary,
    ]);
  });

  it('17 and 18: duplicate texts are skipped; forgets apply before remembers; unknown forget ids are ignored', () => {
    const transcript: Message[] = [
      {
        role: 'system',
        content: 'Base\n\n<experience>\n- [exp_1] Keep  it short\n- [exp_2] Keep it short\n</experience>',
      },
    ];
    const result = applyMutations(transcript, [
      { type: 'ExperienceRememberMutation', text: '  Keep it   short ' },
      { type: 'ExperienceRememberMutation', text: 'New one' },
      { type: 'ExperienceRememberMutation', text: 'New   one' },
      { type: 'ExperienceForgetMutation', experience_id: ' exp_2 ' },
      { type: 'ExperienceForgetMutation', experience_id: 'missing' },
    ]);
    expect(result).toEqual([
      { role: 'system', content: 'Base\n\n<experience>\n- [exp_1] Keep it short\n- [exp_2] New one\n</experience>' },
    ]);
  });

  it('21: two batches separated by another mutation commit separately, and a freed id is issued again', () => {
    const result = applyMutations(
      [{ role: 'system', content: 'S' }],
      [
        { type: 'ExperienceRememberMutation', text: 'one' },
        { type: 'ExperienceRememberMutation', text: 'two' },
        { type: 'UserMessageMutation', message: { role: 'user', content: 'hi' } },
        { type: 'ExperienceForgetMutation', experience_id: 'exp_2' },
        { type: 'ExperienceRememberMutation', text: 'three' },
      ],
    );
    expect(result).toEqual([
      { role: 'system', content: 'S\n\n<experience>\n- [exp_1] one\n- [exp_2] three\n</experience>' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('ids beyond 2^53 and Python integer forms are numbered exactly', () => {
    const transcript: Message[] = [
      {
        role: 'system',
        content: '<experience>\n- [exp_9007199254740993] big\n- [exp_1_0] underscored\n- [custom] other\n</experience>',
      },
    ];
    const result = applyMutations(transcript, [{ type: 'ExperienceRememberMutation', text: 'next' }]);
    expect(result[0]!['content']).toBe(
      '<experience>\n- [exp_9007199254740993] big\n- [exp_1_0] underscored\n- [custom] other\n- [exp_9007199254740994] next\n</experience>',
    );
  });

  it('experience texts that are not strings or blank fail with the spec messages', () => {
    expect(errorOf(() => applyMutations([], [{ type: 'ExperienceRememberMutation', text: 42 }])).message).toBe(
      'experience text must be a string',
    );
    expect(
      errorOf(() => applyMutations([], [{ type: 'ExperienceRememberMutation', text: ' \u3000\x85 ' }])).message,
    ).toBe('experience text must be a non-empty string');
  });

  it('26: a multimodal result for the only call of a message with null content deletes tool_calls and sets content ""', () => {
    const result = applyMutations(
      [
        { role: 'user', content: 'plot' },
        { role: 'assistant', content: null, tool_calls: [call('c1', 'plot')] },
      ],
      [
        {
          type: 'MultimodalToolResultMutation',
          tool_call_id: 'c1',
          tool_name: 'plot',
          arguments: '{"k": 1}',
          user_messages: [{ role: 'user', content: 'img' }],
        },
      ],
    );
    expect(result).toEqual([
      { role: 'user', content: 'plot' },
      { role: 'assistant', content: '' },
      {
        role: 'assistant',
        content: 'I will ask the user to provide the result from tool \'plot\' with arguments: {"k": 1}.',
      },
      { role: 'user', content: 'img' },
    ]);
  });

  it('28: the bare truncation marker', () => {
    expect(applyMutations([], [{ type: 'AssistantTruncatedMutation', partial_content: '' }])).toEqual([
      { role: 'assistant', content: '<Truncated due to cancel from user.>' },
    ]);
  });

  it('36: an explicit "" removes the leading system message and the renderer inserts one holding only the blocks', () => {
    const compiled = compileInvocationTurn(contract({ system_prompt: '', include_must_principles: true }), [
      { role: 'system', content: 'old' },
      { role: 'user', content: 'q' },
    ]);
    expect(compiled.system_prompt).toBe('');
    expect(compiled.transcript).toEqual([{ role: 'user', content: 'q' }]);
    expect(compiled.llm_messages[0]!['content']).toMatch(/^<must_principles>\n/);
    expect(compiled.llm_messages).toHaveLength(2);
  });

  it('40: no usable tool spec means no tool block at all', () => {
    const compiled = compileInvocationTurn(
      contract({ base_instruction: 'Base', tool_prompt_specs: [{ name: '  ' }, { description: 'x' }, { name: 3 }] }),
      [{ role: 'user', content: 'q' }],
    );
    expect(compiled.llm_messages[0]).toEqual({ role: 'system', content: 'Base' });
  });

  it('43: without markers or experience patches a stale snapshot is kept', () => {
    const snapshot = {
      base_system_prompt: 'stale',
      experiences: [],
      summary: null,
      summary_message: null,
      working_messages: [],
    };
    const compiled = compileInvocationTurn(
      contract(),
      [
        { role: 'system', content: 'fresh' },
        { role: 'user', content: 'q' },
      ],
      [],
      snapshot,
    );
    expect(compiled.selfref_snapshot).toEqual(snapshot);
    expect(compiled.system_prompt).toBe('stale');
  });

  it('45: an unterminated experience block loses its content; a summary missing sections stays a plain message', () => {
    const summaryLike = '<context_compaction_summary>\n## Goal\nx\n</context_compaction_summary>';
    const snapshot = {
      base_system_prompt: '',
      experiences: [],
      summary: null,
      summary_message: null,
      working_messages: [],
    };
    const compiled = compileInvocationTurn(
      contract(),
      [
        { role: 'system', content: 'Agent.\n\n<experience>\n- [exp_1] lost' },
        { role: 'assistant', content: summaryLike },
      ],
      [{ type: 'UserMessageMutation', message: { role: 'user', content: 'q' } }],
      snapshot,
    );
    expect(compiled.selfref_snapshot).toEqual(snapshot);
    const remembered = applyMutations(
      [{ role: 'system', content: 'Agent.\n\n<experience>\n- [exp_1] lost' }],
      [{ type: 'ExperienceRememberMutation', text: 'kept' }],
    );
    expect(remembered).toEqual([{ role: 'system', content: 'Agent.\n\n<experience>\n- [exp_1] kept\n</experience>' }]);
  });

  it('51: forgetting the last experience refreshes the snapshot (deviation 10.b)', () => {
    const transcript: Message[] = [
      { role: 'system', content: 'Agent.\n\n<experience>\n- [exp_1] only\n</experience>' },
      { role: 'user', content: 'q' },
    ];
    const snapshot = {
      base_system_prompt: 'Agent.',
      experiences: [{ id: 'exp_1', text: 'only' }],
      summary: null,
      summary_message: null,
      working_messages: [],
    };
    const mutations: Mutation[] = [{ type: 'ExperienceForgetMutation', experience_id: 'exp_1' }];
    const compiled = compileInvocationTurn(contract(), transcript, mutations, snapshot);
    expect(compiled.selfref_snapshot).toEqual({
      ...snapshot,
      experiences: [],
      working_messages: [{ role: 'user', content: 'q' }],
    });
    expect(compiled.llm_messages[0]).toEqual({ role: 'system', content: 'Agent.' });
  });

  it('whitespace follows Python: U+FEFF is not trimmed, U+001C and U+0085 are', () => {
    const compiled = compileInvocationTurn(
      contract({ system_prompt: null }),
      [],
      [{ type: 'ExperienceRememberMutation', text: '\ufeffa\x1c\x85b ' }],
    );
    expect(compiled.reduced_transcript).toEqual([
      { role: 'system', content: '<experience>\n- [exp_1] \ufeffa b\n</experience>' },
    ]);
  });
});
