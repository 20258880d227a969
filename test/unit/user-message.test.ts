import { describe, expect, it } from 'vitest';
import { checkUserMessage } from '../../src/runtime';

const limits = { maxMessageBytes: 10, maxQueuedBytes: 16 };

describe('user message validation', () => {
  it.each([
    [{ content: 'hello' }, 0, null],
    [{ content: 'héllo' }, 0, null],
    [{}, 0, 'expected {"content": string}, got content of type undefined'],
    [{ content: 5 }, 0, 'expected {"content": string}, got content of type number'],
    [{ content: null }, 0, 'expected {"content": string}, got content of type null'],
    ['hello', 0, 'expected {"content": string}'],
    [null, 0, 'expected {"content": string}'],
    [[{ content: 'x' }], 0, 'expected {"content": string}'],
    [{ content: 'x', role: 'system' }, 0, 'unknown field(s): "role"'],
    [{ content: '' }, 0, 'content is empty'],
    [{ content: 'x'.repeat(11) }, 0, 'content is 11 bytes; the limit is 10 (max_user_message_bytes)'],
    // Bytes, not characters: 6 two-byte characters are 12 bytes.
    [{ content: 'éééééé' }, 0, 'content is 12 bytes; the limit is 10 (max_user_message_bytes)'],
    [
      { content: 'x'.repeat(8) },
      9,
      '9 bytes of messages are already waiting; the queue holds 16 (max_queued_message_bytes): send it again after the run has caught up',
    ],
  ])('%j with %i bytes queued -> %s', (payload, queued, reason) => {
    const check = checkUserMessage(payload, limits, queued);
    if (reason === null)
      expect(check).toEqual({
        ok: true,
        content: (payload as { content: string }).content,
        bytes: new TextEncoder().encode((payload as { content: string }).content).length,
      });
    else expect(check).toEqual({ ok: false, reason });
  });
});
