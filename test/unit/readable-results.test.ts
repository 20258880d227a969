import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/context';
import {
  fittedResult,
  fittedSessionResult,
  INLINE_PAYLOAD_BUDGET,
  readableLimitBytes,
  transcriptPageBytes,
  transcriptPageEnd,
  utf8Bytes,
  type AgentRunResult,
} from '../../src/runtime';

const runs = { seed: 20261204, numRuns: 300 };

function transcriptOf(count: number, kb: number): Message[] {
  return [
    { role: 'user', content: 'go' },
    ...Array.from({ length: count }, (_, index) => ({
      role: 'assistant',
      content: `${index}:${'x'.repeat(kb * 1024)}`,
    })),
  ];
}

function resultWith(transcript: Message[], answer: string | null): AgentRunResult {
  return {
    status: 'completed',
    answer,
    transcript,
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  };
}

const bytes = (value: unknown) => utf8Bytes(JSON.stringify(value));
/** No lone surrogate (String.prototype.isWellFormed, which this TypeScript target does not declare). */
const wellFormed = (text: string) =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

describe('a run result stays readable without the payload store', () => {
  it('its limit: under the worker’s threshold with a store, the inline budget without', () => {
    expect(readableLimitBytes({ payloads_by_reference: true, payload_threshold_bytes: 64 * 1024 })).toBe(63 * 1024);
    // Specs recorded before the threshold was: Temporal's default.
    expect(readableLimitBytes({ payloads_by_reference: true })).toBe(255 * 1024);
    expect(readableLimitBytes({})).toBe(255 * 1024);
    expect(readableLimitBytes({ payloads_by_reference: false, payload_threshold_bytes: 1024 })).toBe(
      INLINE_PAYLOAD_BUDGET,
    );
    expect(readableLimitBytes({ payloads_by_reference: true, payload_threshold_bytes: 0 })).toBe(0);
  });

  it('keeps a result that fits whole, the very same object', () => {
    const result = resultWith(transcriptOf(3, 1), 'done');
    expect(fittedResult(result, 10_000)).toBe(result);
  });

  it('leaves out a transcript too large, with its length and the query that reads it', () => {
    const transcript = transcriptOf(80, 4);
    const fitted = fittedResult(resultWith(transcript, 'I read all 80 pages.'), 255 * 1024);
    expect(fitted).toEqual({
      status: 'completed',
      answer: 'I read all 80 pages.',
      transcript: [],
      transcript_omitted: true,
      transcript_length: 81,
      transcript_query: 'transcriptPage',
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
    expect(bytes(fitted)).toBeLessThanOrEqual(255 * 1024);
  });

  it('leaves out an answer too large as well; a null answer is never marked omitted', () => {
    const answer = 'é'.repeat(200_000);
    const fitted = fittedResult(resultWith([{ role: 'assistant', content: answer }], answer), 255 * 1024);
    expect(fitted).toMatchObject({
      answer: null,
      answer_omitted: true,
      transcript_omitted: true,
      transcript_length: 1,
    });
    expect(bytes(fitted)).toBeLessThanOrEqual(255 * 1024);
    const aborted = fittedResult({ ...resultWith(transcriptOf(80, 4), null), status: 'aborted' }, 255 * 1024);
    expect(aborted.answer_omitted).toBeUndefined();
    expect(aborted.answer).toBeNull();
  });

  it("a session's result leaves out its transcript the same way", () => {
    const session = { turns: 2, transcript: transcriptOf(80, 4), usage: null };
    expect(fittedSessionResult(session, 255 * 1024)).toEqual({
      turns: 2,
      transcript: [],
      usage: null,
      transcript_omitted: true,
      transcript_length: 81,
      transcript_query: 'transcriptPage',
    });
    const short = { ...session, transcript: transcriptOf(2, 1) };
    expect(fittedSessionResult(short, 255 * 1024)).toBe(short);
  });

  it('whatever it holds, a fitted result without a huge answer fits its limit', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', maxLength: 3000 }), { maxLength: 40 }),
        fc.nat(20_000),
        (texts, extra) => {
          const limit = 4096 + extra;
          const transcript = texts.map((content) => ({ role: 'tool', tool_call_id: 'c', content }));
          const fitted = fittedResult(resultWith(transcript, texts[0] ?? null), limit);
          expect(bytes(fitted)).toBeLessThanOrEqual(limit);
          if (fitted.transcript_omitted) expect(fitted.transcript_length).toBe(transcript.length);
          else expect(fitted.transcript).toEqual(transcript);
        },
      ),
      runs,
    );
  });
});

describe('transcript pages', () => {
  /** The pages of `text`: what a client joins. */
  function pagesOf(text: string, maxBytes: number): string[] {
    const pages: string[] = [];
    let offset = 0;
    do {
      const end = transcriptPageEnd(text, offset, maxBytes);
      expect(end).toBeGreaterThan(offset);
      pages.push(text.slice(offset, end));
      offset = end;
    } while (offset < text.length);
    return pages;
  }

  it('join back to the text, each within its bytes, never splitting a character', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', maxLength: 400 }), { maxLength: 60 }),
        fc.nat(8192),
        (texts, extra) => {
          const maxBytes = 4096 + extra;
          const text = JSON.stringify(texts.map((content) => ({ role: 'user', content })));
          const pages = pagesOf(text, maxBytes);
          expect(pages.join('')).toBe(text);
          for (const page of pages) {
            expect(bytes(page)).toBeLessThanOrEqual(maxBytes - 512);
            expect(wellFormed(page)).toBe(true);
          }
        },
      ),
      runs,
    );
  });

  it('characters that take more bytes make shorter pages: emoji, quotes, escapes', () => {
    const text = JSON.stringify([{ role: 'user', content: '😀"\\\u0001a'.repeat(20_000) }]);
    for (const maxBytes of [4096, 5001, 16 * 1024, 16 * 1024 + 1, 16 * 1024 + 2, 99_999]) {
      const pages = pagesOf(text, maxBytes);
      expect(pages.join('')).toBe(text);
      expect(pages.length).toBeGreaterThan(text.length / maxBytes);
      for (const page of pages) {
        expect(bytes(page)).toBeLessThanOrEqual(maxBytes - 512);
        expect(wellFormed(page)).toBe(true);
      }
    }
  });

  it('never ends a page between the two halves of a surrogate pair', () => {
    const text = JSON.stringify([{ role: 'user', content: '😀'.repeat(10_000) }]);
    for (let maxBytes = 4096; maxBytes < 4160; maxBytes += 1) {
      const pages = pagesOf(text, maxBytes);
      expect(pages.join('')).toBe(text);
      for (const page of pages) expect(wellFormed(page)).toBe(true);
    }
  });

  it('a page takes what the caller asks within 4 KiB and the run’s readable limit', () => {
    expect(transcriptPageBytes(undefined, 255 * 1024)).toBe(255 * 1024);
    expect(transcriptPageBytes(10_000, 255 * 1024)).toBe(10_000);
    expect(transcriptPageBytes(10, 255 * 1024)).toBe(4096);
    expect(transcriptPageBytes(10_000_000, 255 * 1024)).toBe(255 * 1024);
    expect(transcriptPageBytes('a lot', 255 * 1024)).toBe(255 * 1024);
    // A store taking everything (threshold 0): pages still have 4 KiB.
    expect(transcriptPageBytes(undefined, 0)).toBe(4096);
  });
});
