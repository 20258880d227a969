import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyMutations,
  compileContext,
  compileInvocationTurn,
  compileRequestMessages,
  ContextError,
  convertToLlmRequest,
  normalizeSummary,
  parseSelfRefSnapshot,
  parseSummary,
  reduceTurnContext,
  renderLlmInputMessages,
  renderSummary,
  renderSystemPromptWithExperiences,
  splitSystemPromptExperiences,
  validateToolLinkage,
  type Message,
  type Mutation,
} from '../../src/context';
import { collapse, trim } from '../../src/context/text';
import * as arb from '../support/arbitraries';

const runs = { seed: 20261129, numRuns: 400 };

function objectsOf(value: unknown, into = new Set<object>()): Set<object> {
  if (value !== null && typeof value === 'object') {
    into.add(value);
    for (const child of Object.values(value)) objectsOf(child, into);
  }
  return into;
}

function expectNoSharing(inputs: unknown, outputs: unknown): void {
  const inputObjects = objectsOf(inputs);
  for (const object of objectsOf(outputs)) expect(inputObjects.has(object)).toBe(false);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

function attempt<T>(run: () => T): T | ContextError {
  try {
    return run();
  } catch (error) {
    if (error instanceof ContextError) return error;
    throw error;
  }
}

/** Every assistant tool call id is answered by exactly one tool message. */
function expectEveryCallAnsweredOnce(messages: Message[]): void {
  const calls = new Map<string, number>();
  const results = new Map<string, number>();
  for (const message of messages) {
    const toolCalls = message['tool_calls'];
    if (message['role'] === 'assistant' && Array.isArray(toolCalls)) {
      for (const call of toolCalls) {
        const id = (call as { id: string }).id;
        calls.set(id, (calls.get(id) ?? 0) + 1);
      }
    }
    if (message['role'] === 'tool') {
      const id = message['tool_call_id'] as string;
      results.set(id, (results.get(id) ?? 0) + 1);
    }
  }
  expect(results).toEqual(calls);
}

describe('invariant 1: purity', () => {
  it('apply, reduce, convert, render and compile never modify inputs nor share objects with them', () => {
    fc.assert(
      fc.property(arb.compileCase, ({ input, prompt_contract, selfref_snapshot }) => {
        const before = JSON.stringify([input, prompt_contract, selfref_snapshot]);
        const inputs = [input, prompt_contract, selfref_snapshot];
        const compiled = attempt(() =>
          compileInvocationTurn(prompt_contract, input.transcript, input.mutations, selfref_snapshot),
        );
        const applied = attempt(() => applyMutations(input.transcript, input.mutations));
        const reduced = attempt(() => reduceTurnContext(input.transcript, input.mutations, selfref_snapshot));
        const rendered = renderLlmInputMessages(
          input.transcript,
          prompt_contract.tool_prompt_specs,
          prompt_contract.include_must_principles,
        );
        expect(JSON.stringify([input, prompt_contract, selfref_snapshot])).toBe(before);
        for (const output of [compiled, applied, reduced, rendered])
          if (!(output instanceof ContextError)) expectNoSharing(inputs, output);
        if (!(reduced instanceof ContextError)) {
          const reducedBefore = JSON.stringify(reduced);
          const converted = convertToLlmRequest(reduced, prompt_contract);
          expect(JSON.stringify(reduced)).toBe(reducedBefore);
          expectNoSharing(reduced, converted);
        }
      }),
      runs,
    );
  });
});

describe("the workflow's sharing compile", () => {
  it('gives deep-equal messages and commits, and modifies no input', () => {
    fc.assert(
      fc.property(arb.compileCase, ({ input, prompt_contract, selfref_snapshot }) => {
        const before = JSON.stringify([input, prompt_contract, selfref_snapshot]);
        const copied = attempt(() => compileInvocationTurn(prompt_contract, input.transcript, [], selfref_snapshot));
        // Frozen inputs: the sharing compile must never edit a message (the workflow caches their JSON).
        const frozen = deepFreeze(structuredClone([input.transcript, input.mutations, selfref_snapshot] as const));
        const shared = attempt(() => compileRequestMessages(prompt_contract, frozen[0], frozen[2]));
        expect(shared).toStrictEqual(copied instanceof ContextError ? copied : copied.llm_messages);
        for (const selfref of [false, true]) {
          const committed = attempt(() => compileContext(frozen[0], frozen[1], selfref, true));
          expect(committed).toStrictEqual(attempt(() => compileContext(input.transcript, input.mutations, selfref)));
        }
        expect(JSON.stringify([input, prompt_contract, selfref_snapshot])).toBe(before);
      }),
      runs,
    );
  });
});

describe("the workflow's chained commits (each checks only what it appends to the last)", () => {
  it('give what commits of copies give, errors included', () => {
    fc.assert(
      fc.property(arb.compileCase, fc.nat(), ({ input }, split) => {
        const at = input.mutations.length === 0 ? 0 : split % (input.mutations.length + 1);
        const [first, second] = [input.mutations.slice(0, at), input.mutations.slice(at)];
        const copied = attempt(() =>
          compileContext(compileContext(input.transcript, first, false).transcript, second, false),
        );
        const shared = attempt(() =>
          compileContext(compileContext(input.transcript, first, false, true).transcript, second, false, true, true),
        );
        expect(shared).toStrictEqual(copied);
      }),
      runs,
    );
  });
});

describe('invariant 2: determinism', () => {
  it('the same inputs give deep-equal outputs', () => {
    fc.assert(
      fc.property(arb.compileCase, ({ input, prompt_contract, selfref_snapshot }) => {
        const first = attempt(() =>
          compileInvocationTurn(prompt_contract, input.transcript, input.mutations, selfref_snapshot),
        );
        const second = attempt(() =>
          compileInvocationTurn(prompt_contract, input.transcript, input.mutations, selfref_snapshot),
        );
        expect(second).toStrictEqual(first);
      }),
      runs,
    );
  });
});

describe('invariants 3 and 17: validity after every apply, also after aborts inside parallel batches', () => {
  it('runtime mutation sequences (completed, multimodal and cancelled calls in runtime order) always apply and leave every call answered once', () => {
    fc.assert(
      fc.property(arb.runtimeCase, ({ transcript, mutations }) => {
        const result = applyMutations(transcript, mutations);
        validateToolLinkage(result);
        expectEveryCallAnsweredOnce(result);
      }),
      runs,
    );
  });

  it('committing a runtime sequence step by step gives a valid transcript after every commit', () => {
    fc.assert(
      fc.property(arb.runtimeCase, fc.integer({ min: 1, max: 4 }), ({ transcript, mutations }, chunk) => {
        // The first chunk must cover the results of calls pending in the base transcript.
        const pendingAnswers = mutations.findIndex(
          (m) =>
            m.type !== 'ToolResultMutation' &&
            m.type !== 'ToolCancelledMutation' &&
            m.type !== 'MultimodalToolResultMutation',
        );
        let state = transcript;
        let index = 0;
        let first = pendingAnswers < 0 ? mutations.length : Math.max(pendingAnswers, 0);
        while (index < mutations.length) {
          // Never split an assistant tool-call mutation from its batch results.
          let end = Math.min(mutations.length, index + Math.max(first, chunk));
          while (end < mutations.length && isBatchResult(mutations[end]!)) end += 1;
          state = applyMutations(state, mutations.slice(index, end));
          validateToolLinkage(state);
          index = end;
          first = 0;
        }
        expectEveryCallAnsweredOnce(state);
      }),
      runs,
    );
  });

  it('any mutation list either fails with a ContextError or yields a linkage-valid transcript', () => {
    fc.assert(
      fc.property(arb.mixedCase, ({ transcript, mutations }) => {
        const result = attempt(() => applyMutations(transcript, mutations));
        if (!(result instanceof ContextError)) validateToolLinkage(result);
      }),
      runs,
    );
  });

  it('cancelling a call twice equals cancelling it once', () => {
    fc.assert(
      fc.property(arb.runtimeCase, (runtime) => {
        const once = attempt(() => applyMutations(runtime.transcript, runtime.mutations));
        const doubled = runtime.mutations.flatMap((m): Mutation[] =>
          m.type === 'ToolCancelledMutation' ? [m, m] : [m],
        );
        const twice = attempt(() => applyMutations(runtime.transcript, doubled));
        expect(twice).toStrictEqual(once);
      }),
      runs,
    );
  });
});

function isBatchResult(mutation: Mutation): boolean {
  return (
    mutation.type === 'ToolResultMutation' ||
    mutation.type === 'ToolCancelledMutation' ||
    mutation.type === 'MultimodalToolResultMutation'
  );
}

describe('invariant 4: order', () => {
  it('appending mutations land at the end, in list order', () => {
    const appending = fc.oneof(
      arb.userMessage.map((message) => ({ type: 'UserMessageMutation' as const, message })),
      arb.phrase.map((content) => ({ type: 'AssistantMessageMutation' as const, content })),
      arb.phrase.map((partial_content) => ({ type: 'AssistantTruncatedMutation' as const, partial_content })),
    );
    fc.assert(
      fc.property(arb.runtimeCase, fc.array(appending, { minLength: 1, maxLength: 5 }), (runtime, tail) => {
        const base = applyMutations(runtime.transcript, runtime.mutations);
        const result = applyMutations(runtime.transcript, [...runtime.mutations, ...tail]);
        expect(result.slice(0, base.length)).toStrictEqual(base);
        expect(result.length).toBe(base.length + tail.length);
        tail.forEach((mutation, offset) => {
          const message = result[base.length + offset]!;
          if (mutation.type === 'UserMessageMutation') expect(message).toStrictEqual(mutation.message);
          else if (mutation.type === 'AssistantMessageMutation')
            expect(message).toStrictEqual({ role: 'assistant', content: mutation.content });
          else expect(message['content']).toMatch(/^[\s\S]*<Truncated due to cancel from user\.>$/);
        });
      }),
      runs,
    );
  });
});

describe('invariants 5 and 6: experience batching and ids', () => {
  const batch = fc.array(
    fc.oneof(
      arb.textWithEdges.map((text) => ({ type: 'ExperienceRememberMutation' as const, text })),
      arb.experienceId.map((experience_id) => ({ type: 'ExperienceForgetMutation' as const, experience_id })),
    ),
    { minLength: 1, maxLength: 6 },
  );

  it('a batch changes nothing until the next non-experience mutation, which sees the committed batch', () => {
    fc.assert(
      fc.property(arb.runtimeCase, batch, arb.userMessage, (runtime, experiences, message) => {
        const base = applyMutations(runtime.transcript, runtime.mutations);
        const next: Mutation = { type: 'UserMessageMutation', message };
        const together = applyMutations(base, [...experiences, next]);
        const apart = applyMutations(applyMutations(base, experiences), [next]);
        expect(together).toStrictEqual(apart);
      }),
      runs,
    );
  });

  it('within a batch, forgets apply before remembers whatever their interleaving', () => {
    fc.assert(
      fc.property(arb.runtimeCase, batch, (runtime, experiences) => {
        const base = applyMutations(runtime.transcript, runtime.mutations);
        const forgetsFirst = [
          ...experiences.filter((m) => m.type === 'ExperienceForgetMutation'),
          ...experiences.filter((m) => m.type !== 'ExperienceForgetMutation'),
        ];
        expect(applyMutations(base, experiences)).toStrictEqual(applyMutations(base, forgetsFirst));
      }),
      runs,
    );
  });

  it('a commit never duplicates a collapsed text and numbers new ids from the largest surviving exp_N', () => {
    fc.assert(
      fc.property(arb.runtimeCase, batch, (runtime, experiences) => {
        const base = applyMutations(runtime.transcript, runtime.mutations);
        const before = parseSelfRefSnapshot(base).experiences;
        const after = parseSelfRefSnapshot(applyMutations(base, experiences)).experiences;
        const forgotten = new Set(
          experiences.flatMap((m) => (m.type === 'ExperienceForgetMutation' ? [trim(m.experience_id)] : [])),
        );
        const survivors = before.filter((e) => !forgotten.has(e.id));
        expect(after.slice(0, survivors.length)).toStrictEqual(survivors);
        const added = after.slice(survivors.length);
        const texts = after.slice(survivors.length).map((e) => e.text);
        expect(new Set(texts).size).toBe(texts.length);
        for (const text of texts) expect(survivors.map((e) => e.text)).not.toContain(text);
        let largest = 0n;
        for (const { id } of survivors) {
          const match = /^exp_(\d+)$/.exec(id);
          if (match && BigInt(match[1]!) > largest) largest = BigInt(match[1]!);
        }
        added.forEach((experience, index) => {
          if (survivors.every((s) => /^exp_\d+$/.test(s.id) || !s.id.startsWith('exp_')))
            expect(experience.id).toBe(`exp_${largest + BigInt(index) + 1n}`);
        });
      }),
      runs,
    );
  });
});

describe('invariant 7: canonical system message after a commit', () => {
  it('after an experience commit there is at most one system message, at index 0, rendered from the parsed state', () => {
    fc.assert(
      fc.property(arb.runtimeCase, arb.textWithEdges, (runtime, text) => {
        const result = attempt(() =>
          applyMutations(runtime.transcript, [...runtime.mutations, { type: 'ExperienceRememberMutation', text }]),
        );
        if (result instanceof ContextError) return;
        const systems = result.flatMap((message, index) => (message['role'] === 'system' ? [index] : []));
        expect(systems).toEqual([0]);
        const parsed = parseSelfRefSnapshot(result);
        expect(result[0]!['content']).toBe(
          renderSystemPromptWithExperiences(parsed.base_system_prompt, parsed.experiences),
        );
        expect(result.some((message) => 'reasoning_details' in message)).toBe(false);
      }),
      runs,
    );
  });
});

describe('invariant 13: round trips', () => {
  it('parse(render(summary)) == normalize(summary) for texts whose lines survive the line split', () => {
    // A section's lines are split at every line boundary and trimmed, so a round trip holds for lines
    // that are already trimmed and do not start a section.
    const boundary = /[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/g;
    const line = fc
      .oneof(arb.phrase, fc.string({ unit: 'binary', maxLength: 12 }))
      .map((text) => trim(text.replace(boundary, ' ')))
      .filter((text) => !text.startsWith('## '));
    const text = fc
      .array(
        line.filter((l) => l !== ''),
        { minLength: 1, maxLength: 3 },
      )
      .map((parts) => parts.join('\n'));
    const list = fc.array(
      fc
        .tuple(line, arb.whitespace)
        .map(([item, pad]) => (item === '' ? pad : item + (pad.match(boundary) ? '' : pad))),
      { maxLength: 3 },
    );
    const payload = fc.record({
      goal: text,
      instruction: text,
      discoveries: list,
      completed: list,
      current_status: text,
      likely_next_work: list,
      relevant_files_directories: list,
    });
    fc.assert(
      fc.property(payload, (raw) => {
        const normalized = normalizeSummary(raw);
        expect(parseSummary(renderSummary(normalized))).toEqual(normalized);
      }),
      runs,
    );
  });

  it('split(render(base, experiences)) == (trim(base), experiences) for collapsed texts and ids without ]', () => {
    const lineBreak = /[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\]]/;
    const id = fc
      .string({ minLength: 1, maxLength: 8, unit: 'binary' })
      .map(trim)
      .filter((s) => s !== '' && !lineBreak.test(s));
    const text = fc
      .string({ minLength: 1, maxLength: 20, unit: 'binary' })
      .map(collapse)
      .filter((s) => s !== '');
    const base = fc.oneof(arb.textWithEdges, fc.string({ unit: 'binary' })).filter((s) => !s.includes('<experience>'));
    fc.assert(
      fc.property(base, fc.array(fc.record({ id, text }), { maxLength: 4 }), (prompt, experiences) => {
        expect(splitSystemPromptExperiences(renderSystemPromptWithExperiences(prompt, experiences))).toEqual({
          base: trim(prompt),
          experiences,
        });
      }),
      runs,
    );
  });
});

describe('invariants 10 to 12: rendered requests', () => {
  it('a non-empty request has a system message; rendered content has the block layout with at most one must-principles block', () => {
    fc.assert(
      fc.property(arb.compileCase, ({ input, prompt_contract, selfref_snapshot }) => {
        const compiled = attempt(() =>
          compileInvocationTurn(prompt_contract, input.transcript, input.mutations, selfref_snapshot),
        );
        if (compiled instanceof ContextError || compiled.transcript.length === 0) return;
        const system = compiled.llm_messages.find((m) => m['role'] === 'system' && typeof m['content'] === 'string');
        expect(system).toBeDefined();
        if (compiled.system_prompt) expect(compiled.llm_messages[0]).toBe(system);
        const content = system!['content'] as string;
        expect(content.split('<must_principles>').length).toBeLessThanOrEqual(2);
        if (prompt_contract.include_must_principles) expect(content.endsWith('</must_principles>')).toBe(true);
        if (
          content.includes('<tool_best_practices>') &&
          !compiled.transcript.some((m) => String(m['content']).includes('<tool_best_practices>'))
        ) {
          expect(content.startsWith('<tool_best_practices>')).toBe(true);
        }
      }),
      runs,
    );
  });

  it('resolution order: snapshot, explicit, first transcript system, base instruction, null', () => {
    fc.assert(
      fc.property(arb.compileCase, ({ input, prompt_contract, selfref_snapshot }) => {
        const compiled = attempt(() =>
          compileInvocationTurn(prompt_contract, input.transcript, input.mutations, selfref_snapshot),
        );
        if (compiled instanceof ContextError) return;
        const firstSystem = compiled.reduced_transcript.find(
          (m) => m['role'] === 'system' && typeof m['content'] === 'string',
        );
        const expected =
          compiled.selfref_snapshot !== null
            ? renderSystemPromptWithExperiences(
                compiled.selfref_snapshot.base_system_prompt,
                compiled.selfref_snapshot.experiences,
              )
            : prompt_contract.system_prompt !== null
              ? prompt_contract.system_prompt
              : firstSystem
                ? (firstSystem['content'] as string)
                : prompt_contract.base_instruction || null;
        expect(compiled.system_prompt).toBe(expected);
      }),
      runs,
    );
  });
});

describe('invariant 19: fresh snapshot with experiences', () => {
  it('a compile with a snapshot and experience patches returns the parse of the reduced transcript', () => {
    fc.assert(
      fc.property(arb.runtimeCase, arb.textWithEdges, (runtime, text) => {
        const snapshot = {
          base_system_prompt: 'stale',
          experiences: [],
          summary: null,
          summary_message: null,
          working_messages: [],
        };
        const mutations: Mutation[] = [...runtime.mutations, { type: 'ExperienceRememberMutation', text }];
        const compiled = attempt(() =>
          compileInvocationTurn(
            { base_instruction: '', system_prompt: null, tool_prompt_specs: [], include_must_principles: false },
            runtime.transcript,
            mutations,
            snapshot,
          ),
        );
        if (compiled instanceof ContextError) return;
        expect(compiled.selfref_snapshot).toStrictEqual(parseSelfRefSnapshot(compiled.reduced_transcript));
      }),
      runs,
    );
  });
});
