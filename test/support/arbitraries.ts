import fc from 'fast-check';
import {
  renderSummary,
  type JsonValue,
  type Experience,
  type Message,
  type Mutation,
  type PromptContract,
  type SelfRefSnapshot,
  type SummaryPayload,
} from '../../src/context';

/**
 * Generators of compile inputs that reach every rule of the spec: odd whitespace (including the
 * characters where JavaScript and Python disagree), SelfRef markers, framework blocks, summaries that
 * parse and ones that do not, pending tool calls answered by plain, multimodal and cancelled results.
 */

const odd = ['\u00a0', '\u2003', '\u3000', '\x1c', '\x1f', '\x85', '\ufeff', '\u200b', '\t', '\r\n', '\v'];
const words = [
  'alpha',
  'Beta',
  'gamma.',
  'Use `grep`',
  'check',
  'tests',
  'x',
  'ünïcödé',
  '日本',
  '😀',
  '[exp_9]',
  '-',
  'exp_3',
  '##',
];

export const whitespace = fc.constantFrom(' ', ' ', '  ', '\n', '\n\n', ...odd);
const word = fc.constantFrom(...words);
export const phrase = fc
  .array(fc.tuple(word, whitespace), { minLength: 1, maxLength: 5 })
  .map((parts) => parts.map(([w, s]) => w + s).join(''));
export const textWithEdges = fc
  .tuple(fc.option(whitespace, { nil: '' }), phrase, fc.option(whitespace, { nil: '' }))
  .map(([a, b, c]) => a + b + c);

export const experienceId = fc.oneof(
  fc.integer({ min: 1, max: 12 }).map((n) => `exp_${n}`),
  fc.constantFrom('custom', 'exp_ 4', 'exp_1_0', 'exp_-2', 'exp_99999999999999999999', 'exp_x', ' exp_2 '),
);
const experience: fc.Arbitrary<Experience> = fc.record({ id: experienceId, text: textWithEdges });

const blockTags = fc.constantFrom(
  '<must_principles>\nstale rule\n</must_principles>',
  '<tool_best_practices>\nold\n</tool_best_practices>',
  '<runtime_primitive_contract>x</runtime_primitive_contract>',
  '[SelfReference Memory Contract] legacy [/SelfReference Memory Contract]',
  '<must_principles> unterminated',
);

function experienceBlock(items: Experience[], variant: number): string {
  const body = items.map((item) => (variant === 1 ? `-[${item.id}]   ${item.text}` : `- [${item.id}] ${item.text}`));
  if (variant === 2) body.push('not a bullet');
  const block = ['<experience>', ...body, ...(variant === 3 ? [] : ['</experience>'])].join('\n');
  return block;
}

const systemContent = fc
  .record({
    base: fc.option(textWithEdges, { nil: '' }),
    experiences: fc.array(experience, { maxLength: 4 }),
    blockVariant: fc.integer({ min: 0, max: 4 }),
    framework: fc.option(blockTags, { nil: undefined }),
    trailing: fc.option(phrase, { nil: undefined }),
  })
  .map(({ base, experiences, blockVariant, framework, trailing }) => {
    const parts = [base];
    if (framework !== undefined) parts.unshift(framework);
    if (experiences.length > 0 && blockVariant < 4) parts.push(experienceBlock(experiences, blockVariant));
    if (trailing !== undefined) parts.push(trailing);
    return parts.join('\n\n');
  });

const summaryPayload: fc.Arbitrary<SummaryPayload> = fc.record({
  goal: phrase,
  instruction: phrase,
  discoveries: fc.array(phrase, { maxLength: 3 }),
  completed: fc.array(phrase, { maxLength: 2 }),
  current_status: phrase,
  likely_next_work: fc.array(phrase, { maxLength: 2 }),
  relevant_files_directories: fc.array(fc.constantFrom('src/a.ts', 'docs/', '  '), { maxLength: 2 }),
});

const summaryContent = fc.tuple(summaryPayload, fc.integer({ min: 0, max: 4 })).map(([payload, variant]) => {
  const safe = {
    ...payload,
    goal: payload.goal.trim() || 'goal',
    instruction: payload.instruction.trim() || 'do',
    current_status: payload.current_status.trim() || 'ok',
  };
  let text: string;
  try {
    text = renderSummary({
      ...safe,
      discoveries: safe.discoveries.map((d) => d.trim()).filter(Boolean),
      completed: safe.completed.map((d) => d.trim()).filter(Boolean),
      likely_next_work: safe.likely_next_work.map((d) => d.trim()).filter(Boolean),
      relevant_files_directories: safe.relevant_files_directories.map((d) => d.trim()).filter(Boolean),
    });
  } catch {
    text = '<context_compaction_summary>\n## Goal\nx\n</context_compaction_summary>';
  }
  if (variant === 1) return text.replace('## Goal', '##   Goal');
  if (variant === 2) return text.replace(/## Completed[\s\S]*?## Current/, '## Current');
  if (variant === 3) return `  ${text}\n`;
  return text;
});

const callId = fc.integer({ min: 1, max: 6 }).map((n) => `call_${n}`);
const toolName = fc.constantFrom('lookup', 'plot', 'grep', 'execute_code');
const argumentsText = fc.constantFrom('{}', '{"q": "x"}', '{"n": 1}', '{"a": [1, 2]}');
const toolCall = fc.record({ id: callId, name: toolName, args: argumentsText }).map(({ id, name, args }) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
}));

const imagePart = fc.constantFrom('https://example.com/p.png', 'data:image/png;base64,iVBORw0KGgo=').map((url) => ({
  type: 'image_url',
  image_url: { url, detail: 'auto' },
}));
export const userMessage: fc.Arbitrary<Message> = fc.oneof(
  textWithEdges.map((content) => ({ role: 'user', content })),
  fc.tuple(phrase, imagePart).map(([text, image]) => ({ role: 'user', content: [{ type: 'text', text }, image] })),
);

const reasoningDetails: JsonValue[] = [{ id: 'r1', format: 'x', index: 0, type: 'reasoning.encrypted', data: 'abc' }];
const reasoning = fc.option(fc.constant(reasoningDetails), { nil: undefined });

/** One structurally valid stretch of conversation. */
const segment = fc.oneof(
  { weight: 3, arbitrary: userMessage.map((m) => [m]) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(textWithEdges, reasoning)
      .map(([content, details]) => [
        { role: 'assistant', content, ...(details ? { reasoning_details: details } : {}) },
      ]),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.uniqueArray(toolCall, { minLength: 1, maxLength: 3, selector: (c) => c.id }),
        fc.option(phrase, { nil: null }),
        fc.boolean(),
      )
      .map(([calls, content, reverse]) => {
        const results = calls.map((call) => ({
          role: 'tool',
          tool_call_id: call.id,
          content: JSON.stringify(`result of ${call.id}`),
        }));
        return [{ role: 'assistant', content, tool_calls: calls }, ...(reverse ? results.reverse() : results)];
      }),
  },
  { weight: 1, arbitrary: systemContent.map((content) => [{ role: 'system', content }]) },
  { weight: 1, arbitrary: summaryContent.map((content) => [{ role: 'assistant', content }]) },
  { weight: 1, arbitrary: fc.constant([{ role: 'system', content: 'named', name: 'ops' }]) },
) as fc.Arbitrary<Message[]>;

/** A base transcript, optionally ending with an assistant tool-call message whose calls wait for results. */
const transcriptWithPending = fc
  .record({
    leadingSystem: fc.option(systemContent, { nil: undefined }),
    segments: fc.array(segment, { maxLength: 6 }),
    pending: fc.option(fc.uniqueArray(toolCall, { minLength: 1, maxLength: 3, selector: (c) => c.id }), {
      nil: undefined,
    }),
  })
  .map(({ leadingSystem, segments, pending }) => {
    const messages: Message[] = [];
    if (leadingSystem !== undefined) messages.push({ role: 'system', content: leadingSystem });
    for (const part of segments) messages.push(...part);
    if (pending) messages.push({ role: 'assistant', content: null, tool_calls: pending });
    const pendingCalls =
      pending?.map((call) => ({ id: call.id, name: call.function.name, args: call.function.arguments })) ?? [];
    return { transcript: messages, pendingCalls };
  });

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

const reason = fc.constantFrom('', 'user_interrupt', 'operator');

/** Results for pending calls in the runtime's order (spec 7.6, 10.c): plain and cancelled first, multimodal last. */
function batchResults(calls: PendingCall[], outcomes: number[], abortReason: string): Mutation[] {
  const plain: Mutation[] = [];
  const multimodal: Mutation[] = [];
  calls.forEach((call, index) => {
    const outcome = outcomes[index] ?? 0;
    if (outcome === 0)
      plain.push({
        type: 'ToolResultMutation',
        tool_call_id: call.id,
        content: JSON.stringify({ ok: call.id }, null, 2),
      });
    else if (outcome === 1)
      plain.push({
        type: 'ToolCancelledMutation',
        tool_call_id: call.id,
        tool_name: call.name,
        abort_reason: abortReason,
      });
    else
      multimodal.push({
        type: 'MultimodalToolResultMutation',
        tool_call_id: call.id,
        tool_name: call.name,
        arguments: call.args,
        user_messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: `This is an image returned by tool '${call.name}':` },
              { type: 'image_url', image_url: { url: 'https://example.com/i.png', detail: 'auto' } },
            ],
          },
        ],
      });
  });
  return [...plain, ...multimodal];
}

const experienceMutation: fc.Arbitrary<Mutation> = fc.oneof(
  textWithEdges.map((text) => ({ type: 'ExperienceRememberMutation' as const, text })),
  fc
    .constantFrom('pref', 'Always cite sources', ' spaced   text ')
    .map((text) => ({ type: 'ExperienceRememberMutation' as const, text })),
  experienceId.map((experience_id) => ({ type: 'ExperienceForgetMutation' as const, experience_id })),
);

/** One runtime step that keeps the transcript valid. */
function runtimeStep(): fc.Arbitrary<Mutation[]> {
  return fc.oneof(
    { weight: 3, arbitrary: experienceMutation.map((m) => [m]) },
    { weight: 2, arbitrary: userMessage.map((message) => [{ type: 'UserMessageMutation' as const, message }]) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.option(phrase, { nil: null }), reasoning)
        .map(([content, details]) => [
          { type: 'AssistantMessageMutation' as const, content, ...(details ? { reasoning_details: details } : {}) },
        ]),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(phrase, reason)
        .map(([partial_content, abort_reason]) => [
          { type: 'AssistantTruncatedMutation' as const, partial_content, abort_reason },
        ]),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.uniqueArray(toolCall, { minLength: 1, maxLength: 4, selector: (c) => c.id }),
          fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 4, maxLength: 4 }),
          reason,
          fc.option(phrase, { nil: null }),
        )
        .map(([calls, outcomes, abortReason, content]) => {
          const pending = calls.map((call) => ({
            id: call.id,
            name: call.function.name,
            args: call.function.arguments,
          }));
          return [
            { type: 'AssistantMessageMutation' as const, content, tool_calls: calls },
            ...batchResults(pending, outcomes, abortReason),
          ];
        }),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          summaryContent,
          fc.array(
            fc.oneof(fc.record({ text: textWithEdges }), fc.constant({ text: '   ' }), fc.constant({ note: 1 })),
            { maxLength: 2 },
          ),
        )
        .map(([content, remember]) => [
          { type: 'ContextSummaryMutation' as const, summary_message: { role: 'assistant', content }, remember },
        ]),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(toolName, reason)
        .map(([tool_name, abort_reason]) => [
          { type: 'ToolCancelledMutation' as const, tool_call_id: 'call_new', tool_name, abort_reason },
        ]),
    },
    {
      weight: 1,
      arbitrary: fc
        .array(userMessage, { maxLength: 2 })
        .map((messages) => [{ type: 'ContextReplaceMutation' as const, messages }]),
    },
  );
}

function withIdSuffix(mutation: Mutation, suffix: string): Mutation {
  switch (mutation.type) {
    case 'AssistantMessageMutation':
      return mutation.tool_calls
        ? { ...mutation, tool_calls: mutation.tool_calls.map((call) => ({ ...call, id: call.id + suffix })) }
        : mutation;
    case 'ToolResultMutation':
    case 'ToolCancelledMutation':
    case 'MultimodalToolResultMutation':
      return { ...mutation, tool_call_id: mutation.tool_call_id + suffix };
    default:
      return mutation;
  }
}

/** A base transcript and a mutation list that the runtime could produce: must always apply cleanly. */
export const runtimeCase = fc
  .tuple(
    transcriptWithPending,
    fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 3 }),
    reason,
    fc.array(runtimeStep(), { maxLength: 6 }),
  )
  .map(([{ transcript, pendingCalls }, outcomes, abortReason, steps]) => ({
    transcript,
    // Fresh ids per step: a provider may reuse ids across turns, never inside one batch.
    mutations: [
      ...batchResults(pendingCalls, outcomes, abortReason),
      ...steps.flatMap((step, index) => step.map((m) => withIdSuffix(m, `_s${index}`))),
    ],
  }));

/** Any mutation at all, including ones that break linkage or carry ill-typed experience texts. */
const anyMutation: fc.Arbitrary<Mutation> = fc.oneof(
  experienceMutation,
  fc.constantFrom(42, '   ', '').map((text) => ({ type: 'ExperienceRememberMutation' as const, text })),
  fc
    .tuple(callId, fc.constantFrom('"x"', '{}'))
    .map(([tool_call_id, content]) => ({ type: 'ToolResultMutation' as const, tool_call_id, content })),
  fc.tuple(callId, toolName, reason).map(([tool_call_id, tool_name, abort_reason]) => ({
    type: 'ToolCancelledMutation' as const,
    tool_call_id,
    tool_name,
    abort_reason,
  })),
  fc.tuple(callId, toolName).map(([tool_call_id, tool_name]) => ({
    type: 'MultimodalToolResultMutation' as const,
    tool_call_id,
    tool_name,
    arguments: '{}',
    user_messages: [{ role: 'user', content: 'img' }],
  })),
  fc
    .uniqueArray(toolCall, { minLength: 1, maxLength: 2, selector: (c) => c.id })
    .map((tool_calls) => ({ type: 'AssistantMessageMutation' as const, content: null, tool_calls })),
  fc
    .option(phrase, { nil: null })
    .map((content) => ({ type: 'AssistantMessageMutation' as const, content: content ?? '' })),
  userMessage.map((message) => ({ type: 'UserMessageMutation' as const, message })),
);

export const mixedCase = fc.oneof(
  { weight: 3, arbitrary: runtimeCase },
  {
    weight: 1,
    arbitrary: fc
      .tuple(transcriptWithPending, fc.array(anyMutation, { maxLength: 5 }))
      .map(([{ transcript }, mutations]) => ({ transcript, mutations })),
  },
);

const toolPromptSpec = fc.record(
  {
    name: fc.oneof(fc.constantFrom('lookup', '  grep ', '', 'zeta', 'Alpha', '😀tool'), fc.constant(7)),
    description: fc.oneof(phrase, fc.constant(''), fc.constant(3)),
    best_practices: fc.oneof(
      fc.array(fc.oneof(phrase, fc.constantFrom('Search files', 'search FILES.', '`x`', '  ', 5)), { maxLength: 4 }),
      fc.constant('nope'),
    ),
    prompt_injections: fc.array(
      fc.oneof(fc.constantFrom('<note>ro</note>', '<note>ro</note>', ' ', 'line1\nline2'), fc.constant(1)),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);

const promptContract: fc.Arbitrary<PromptContract> = fc.record({
  base_instruction: fc.oneof(fc.constant(''), textWithEdges),
  system_prompt: fc.oneof(fc.constant(null), fc.constant(''), systemContent),
  tool_prompt_specs: fc.array(toolPromptSpec, { maxLength: 3 }),
  include_must_principles: fc.boolean(),
}) as fc.Arbitrary<PromptContract>;

const snapshot = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.record({
      base_system_prompt: fc.oneof(fc.constant(''), textWithEdges),
      experiences: fc.array(
        fc.record({
          id: fc.integer({ min: 1, max: 9 }).map((n) => `exp_${n}`),
          text: phrase.map((p) => p.replace(/\s+/g, ' ').trim() || 'x'),
        }),
        { maxLength: 3 },
      ),
      summary: fc.constant(null),
      summary_message: fc.constant(null),
      working_messages: fc.constant([]),
    }),
  },
) as fc.Arbitrary<SelfRefSnapshot | null>;

export const compileCase = fc.record({
  input: mixedCase,
  prompt_contract: promptContract,
  selfref_snapshot: snapshot,
});
