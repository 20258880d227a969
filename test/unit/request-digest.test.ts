import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digestText, requestFields, RequestWriter } from '../../src/runtime';

const message = fc.record({
  role: fc.constantFrom('user', 'assistant', 'tool'),
  // Full Unicode, astral characters (surrogate pairs) included.
  content: fc.string({ unit: 'grapheme', maxLength: 40 }),
});
const options = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

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
          const { text, stable, messagesAt, digest } = new RequestWriter().write(request(messages));
          expect(text).toBe(JSON.stringify(request(messages)));
          expect(digest).toBe(sha256(text));
          expect(text[stable]).toBe(']');
          expect(
            new RequestWriter().write(request([...messages, ...more])).text.startsWith(text.slice(0, stable)),
          ).toBe(true);
          // The fields around the messages parse alone, as the activity reads them.
          expect(requestFields(text, stable, messagesAt)).toEqual(JSON.parse(JSON.stringify(request([]))));
        },
      ),
    );
  });

  it('options that mimic the placeholder fall back to no stable prefix, with the same text', () => {
    const request = { note: '\u0000patchloop:messages\u0000', model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    const text = JSON.stringify(request);
    expect(new RequestWriter().write(request)).toEqual({ text, stable: 0, messagesAt: 0, digest: sha256(text) });
  });

  it('one writer gives each request exactly its text and whole-text SHA-256 through appends, rewrites and restarts', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.constantFrom('append', 'rewrite', 'copy', 'system', 'same'), fc.array(message, { maxLength: 3 })),
        ),
        (steps) => {
          const writer = new RequestWriter();
          let messages: Array<{ role: string; content: string }> = [];
          for (const [kind, added] of steps) {
            if (kind === 'append') messages = [...messages, ...added];
            if (kind === 'rewrite') messages = [...added, ...messages.slice(1)];
            // Equal values in new objects, and a first message replaced as the system prompt is.
            if (kind === 'copy') messages = messages.map((entry) => ({ ...entry }));
            if (kind === 'system')
              messages = [{ role: 'system', content: added[0]?.content ?? '' }, ...messages.slice(1)];
            const request = { model: 'm', messages, stream: false };
            const written = writer.write(request);
            expect(written.text).toBe(JSON.stringify(request));
            expect(written.digest).toBe(sha256(written.text));
            expect(digestText(written.text)).toBe(written.digest);
          }
        },
      ),
    );
  });
});
