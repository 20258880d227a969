import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digestText, RequestDigest, requestFields, requestText } from '../../src/runtime';

const message = fc.record({
  role: fc.constantFrom('user', 'assistant', 'tool'),
  // Full Unicode, astral characters (surrogate pairs) included.
  content: fc.string({ unit: 'grapheme', maxLength: 40 }),
});
const options = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });

describe('request texts and their digests', () => {
  it('the text is JSON.stringify of the request; its stable prefix starts the text of every longer transcript', () => {
    fc.assert(
      fc.property(
        options,
        fc.array(message, { maxLength: 6 }),
        fc.array(message, { maxLength: 3 }),
        (extra, messages, more) => {
          const request = (all: unknown[]) => ({
            ...extra,
            model: 'm',
            messages: all,
            tools: [{ type: 'function' }],
            stream: true,
          });
          const { text, stable } = requestText(request(messages));
          expect(text).toBe(JSON.stringify(request(messages)));
          expect(text[stable]).toBe(']');
          expect(requestText(request([...messages, ...more])).text.startsWith(text.slice(0, stable))).toBe(true);
          // The fields around the messages parse alone, as the activity reads them.
          expect(requestFields(text, stable, requestText(request(messages)).messagesAt)).toEqual(
            JSON.parse(JSON.stringify(request([]))),
          );
        },
      ),
    );
  });

  it('options that mimic the placeholder fall back to no stable prefix, with the same text', () => {
    const request = { note: '\u0000patchloop:messages\u0000', model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(requestText(request)).toEqual({ text: JSON.stringify(request), stable: 0, messagesAt: 0 });
  });

  it('the incremental digest equals the whole-text SHA-256 through appends, rewrites and restarts', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('append', 'rewrite', 'same'), fc.array(message, { maxLength: 3 }))),
        (steps) => {
          const digest = new RequestDigest();
          let messages: Array<{ role: string; content: string }> = [];
          for (const [kind, added] of steps) {
            if (kind === 'append') messages = [...messages, ...added];
            if (kind === 'rewrite') messages = [...added, ...messages.slice(1)];
            const compiled = requestText({ model: 'm', messages, stream: false });
            const expected = createHash('sha256').update(compiled.text, 'utf8').digest('hex');
            expect(digest.digest(compiled)).toBe(expected);
            expect(digestText(compiled.text)).toBe(expected);
          }
        },
      ),
    );
  });
});
