import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSummary, validateToolLinkage, type Message } from '../../src/context';
import {
  compactionTarget,
  ContextSettings,
  estimateRequestTokens,
  isSummaryMessage,
  keepRecentTokens,
  messagesTokens,
  modelWindow,
  MODEL_WINDOWS,
  parseContextOverflow,
  planCompaction,
  summarizedTranscript,
  summaryChunks,
  summaryMessage,
  tokenRate,
  type CompactionBudget,
} from '../../src/runtime';
import { parseModelWindows } from '../../src/config/environment';

const runs = { seed: 20261204, numRuns: 150 };

const text = (min: number, max: number) =>
  fc
    .integer({ min, max })
    .chain((length) => fc.string({ minLength: length, maxLength: length, unit: 'grapheme-ascii' }));

/** A stretch of an agent's work: a reply, a user message, or a call with its results (sizes up to 20,000 chars). */
const unit = fc.oneof(
  text(0, 2000).map((content) => [{ role: 'assistant', content }]),
  text(1, 3000).map((content) => [{ role: 'user', content }]),
  fc.tuple(fc.integer({ min: 1, max: 3 }), text(0, 20_000), fc.nat()).map(([calls, result, seed]) => {
    const ids = Array.from({ length: calls }, (_, index) => `call_${seed}_${index}`);
    return [
      {
        role: 'assistant',
        content: null,
        tool_calls: ids.map((id) => ({
          id,
          type: 'function',
          function: { name: 'fetch', arguments: `{"id":"${id}"}` },
        })),
      },
      ...ids.map((id, index) => ({ role: 'tool', tool_call_id: id, content: index === 0 ? result : 'ok' })),
    ];
  }),
);

const transcript = fc
  .record({
    system: text(0, 600),
    task: text(1, 60_000),
    units: fc.array(unit, { maxLength: 30 }),
    summary: fc.option(text(1, 3000), { nil: undefined }),
  })
  .map(({ system, task, units, summary }) => {
    const messages: Message[] = [
      { role: 'system', content: system },
      { role: 'user', content: task },
    ];
    if (summary !== undefined) messages.push(summaryMessage(summary));
    for (const part of units) messages.push(...(part as Message[]));
    return messages;
  });

const settings = ContextSettings.parse({});

function compact(messages: Message[], window: number, summary: string, rate = 1 / 3): Message[] {
  const budget: CompactionBudget = {
    target: compactionTarget(window, settings),
    keepRecent: keepRecentTokens(settings, window),
    strategy: settings.strategy,
    rate,
  };
  const plan = planCompaction(messages, budget);
  return plan.kind === 'done' ? plan.messages : summarizedTranscript(plan, summary, budget);
}

describe('compaction keeps a valid transcript that fits', () => {
  it('any transcript compacts to one that fits the target, keeps tool pairs, the system message and the task', () => {
    fc.assert(
      fc.property(transcript, fc.integer({ min: 4000, max: 64_000 }), text(0, 40_000), (messages, window, summary) => {
        const compacted = compact(messages, window, summary);
        expect(() => validateToolLinkage(compacted)).not.toThrow();
        expect(messagesTokens(compacted)).toBeLessThanOrEqual(compactionTarget(window, settings));
        expect(compacted[0]).toEqual(messages[0]);
        // The task stays, whole or cut around a visible marker that keeps its beginning.
        const task = String(messages[1]!['content']);
        const kept = String(compacted[1]!['content']);
        expect(compacted[1]!['role']).toBe('user');
        const head = kept.split('\n[... ')[0]!;
        expect(
          kept === task || (kept.includes('characters cut to fit the context window') && task.startsWith(head)),
        ).toBe(true);
        // At most one summary, never nested.
        const summaries = compacted.filter((message) => isSummaryMessage(message));
        expect(summaries.length).toBeLessThanOrEqual(1);
        for (const message of summaries)
          expect(String(message['content']).split('<context_compaction_summary>').length).toBe(2);
      }),
      runs,
    );
  });

  it('a later compaction updates the earlier summary: one summary after many rounds', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(unit, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 6 }),
        (rounds) => {
          let messages: Message[] = [
            { role: 'system', content: 'agent' },
            { role: 'user', content: 'the task' },
          ];
          for (const [index, units] of rounds.entries()) {
            for (const part of units) messages.push(...(part as Message[]));
            messages = compact(messages, 8000, `round ${index}`);
            expect(() => validateToolLinkage(messages)).not.toThrow();
            expect(messages.filter((message) => isSummaryMessage(message)).length).toBeLessThanOrEqual(1);
            expect(messages[1]).toEqual({ role: 'user', content: 'the task' });
          }
        },
      ),
      { ...runs, numRuns: 100 },
    );
  });

  it('clears old tool results first, keeping each call and a stub that says how large the result was', () => {
    const big = 'x'.repeat(4000);
    const messages: Message[] = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: 'the task' },
    ];
    for (let index = 0; index < 8; index += 1)
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${index}`, type: 'function', function: { name: 'fetch', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: `c${index}`, content: big },
      );
    const plan = planCompaction(messages, { target: 6000, keepRecent: 3000, strategy: settings.strategy, rate: 1 / 3 });
    expect(plan.kind).toBe('done');
    if (plan.kind !== 'done') return;
    expect(plan.messages).toHaveLength(messages.length);
    expect(plan.stats.cleared_tool_results).toBeGreaterThan(0);
    expect(plan.messages[3]).toEqual({
      role: 'tool',
      tool_call_id: 'c0',
      content: '[tool result cleared to save context: 4,000 characters]',
    });
    // The newest results stay verbatim.
    expect(plan.messages.at(-1)).toEqual(messages.at(-1));
  });

  it('a task that fits under the limit stays whole; only a task that cannot fit is cut', () => {
    const task = 't'.repeat(12_000); // about 4,000 tokens
    const messages: Message[] = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: task },
    ];
    for (let index = 0; index < 6; index += 1)
      messages.push({ role: 'assistant', content: `step ${index} ${'y'.repeat(3000)}` });
    const budget = { target: 3000, limit: 7000, keepRecent: 1000, strategy: settings.strategy, rate: 1 / 3 };
    const plan = planCompaction(messages, budget);
    expect(plan.kind).toBe('summarize');
    if (plan.kind !== 'summarize') return;
    const compacted = summarizedTranscript(plan, 'so far: six steps', budget);
    expect(compacted[1]).toEqual({ role: 'user', content: task });
    expect(messagesTokens(compacted)).toBeLessThanOrEqual(7000);
    // Under a limit it cannot fit, the task is cut around the marker.
    const tight = summarizedTranscript(plan, 'so far: six steps', { ...budget, limit: 3000 });
    expect(String(tight[1]!['content'])).toContain('characters cut to fit the context window');
    expect(messagesTokens(tight)).toBeLessThanOrEqual(3000);
  });

  it('summarizes when clearing is not enough, and keeps a reply that does not parse as plain summary text', () => {
    const messages: Message[] = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: 'the task' },
    ];
    for (let index = 0; index < 40; index += 1)
      messages.push({ role: 'assistant', content: `step ${index} ${'y'.repeat(900)}` });
    const budget = { target: 3000, keepRecent: 1000, strategy: settings.strategy, rate: 1 / 3 };
    const plan = planCompaction(messages, budget);
    expect(plan.kind).toBe('summarize');
    if (plan.kind !== 'summarize') return;
    const compacted = summarizedTranscript(plan, 'the model wrote prose, not the format', budget);
    expect(compacted[2]).toEqual({
      role: 'assistant',
      content: '<context_compaction_summary>\nthe model wrote prose, not the format\n</context_compaction_summary>',
    });
    expect(compacted.at(-1)).toEqual(messages.at(-1));
    // A reply in the seven-field format is kept canonically, and parses.
    const formatted = summaryMessage(
      '## Goal\nShip\n## Instruction\nTests green\n## Discoveries\n- slow\n## Completed\n- lexer\n## Current Status\nhalf\n## Likely next work\n- parser\n## Relevant files/directories\n- src/',
    );
    expect(parseSummary(formatted['content'])).toMatchObject({ goal: 'Ship', completed: ['lexer'] });
  });

  it('cuts the material of summary calls into bounded chunks, a giant message cut with a marker', () => {
    const middle: Message[] = [
      { role: 'user', content: 'z'.repeat(100_000) },
      { role: 'assistant', content: 'short' },
    ];
    const chunks = summaryChunks(middle, 2000, 1 / 3);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(6000);
    expect(chunks.join('')).toContain('characters cut to fit the context window');
    expect(chunks.join('')).toContain('short');
  });
});

describe('measuring requests', () => {
  it('errs high without a provider count, and follows the provider once it counted', () => {
    expect(estimateRequestTokens(3000, null)).toBe(1000);
    // The provider counted 1 token per 4 characters: still measured at 1 per 3 (never below).
    const measure = { request_chars: 40_000, prompt_tokens: 10_000 };
    expect(tokenRate(measure)).toBeCloseTo(1 / 3);
    expect(estimateRequestTokens(43_000, measure)).toBe(11_000);
    // A model that counts more tokens per character than that is measured at its own rate.
    const dense = { request_chars: 10_000, prompt_tokens: 8_000 };
    expect(estimateRequestTokens(12_000, dense)).toBe(9_600);
    expect(estimateRequestTokens(5_000, dense)).toBe(4_000);
  });

  it("reads the sizes out of providers' context-length errors", () => {
    expect(
      parseContextOverflow(
        "This model's maximum context length is 12000 tokens. However, your messages resulted in 13452 tokens. Please reduce the length of the messages.",
      ),
    ).toEqual({ window_tokens: 12000, request_tokens: 13452 });
    expect(
      parseContextOverflow(
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).",
      ),
    ).toEqual({ window_tokens: 4096, request_tokens: 4000 });
    expect(parseContextOverflow('prompt is too long: 208310 tokens > 200000 maximum')).toEqual({
      window_tokens: 200000,
      request_tokens: 208310,
    });
    expect(parseContextOverflow('Requested tokens (9000) exceed context window of 8192')).toEqual({
      window_tokens: 8192,
      request_tokens: 9000,
    });
    expect(parseContextOverflow('too long')).toEqual({});
  });

  it('knows well-known windows, dated snapshots and router prefixes; the worker adds and corrects entries', () => {
    expect(modelWindow('gpt-4o-mini', MODEL_WINDOWS)).toBe(128_000);
    expect(modelWindow('gpt-4o-2024-08-06', MODEL_WINDOWS)).toBe(128_000);
    expect(modelWindow('openai/gpt-4.1-mini', MODEL_WINDOWS)).toBe(1_047_576);
    expect(modelWindow('gpt-4-0613', MODEL_WINDOWS)).toBe(8_192);
    expect(modelWindow('smollm2', MODEL_WINDOWS)).toBeNull();
    const worker = parseModelWindows('smollm2=8192, gpt-4o=64000');
    expect(modelWindow('smollm2', MODEL_WINDOWS, worker)).toBe(8192);
    expect(modelWindow('gpt-4o', MODEL_WINDOWS, worker)).toBe(64_000);
    expect(() => parseModelWindows('gpt-4o=lots')).toThrow(
      "PATCHLOOP_MODEL_WINDOWS: 'gpt-4o=lots' is not model=tokens",
    );
  });

  it('refuses invalid settings, naming the field', () => {
    expect(() => ContextSettings.parse({ compact_at: 1.2 })).toThrow(/compact_at/);
    expect(() => ContextSettings.parse({ window_tokens: 0 })).toThrow(/window_tokens/);
  });
});
