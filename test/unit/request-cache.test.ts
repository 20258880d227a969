import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RequestCache, type LoadedRequest } from '../../src/activities/request-source';

const held = (text: string) => ({ text, stable: text.length, hashAtStable: createHash('sha256').update(text) });
const loaded = (text: string): LoadedRequest => ({
  request: { model: 'm', messages: [], stream: true } as unknown as LoadedRequest['request'],
  text,
  chars: text.length,
  charsRead: text.length,
});

describe('the LLM activity cache', () => {
  it('keeps each run its last request text, the least recently used going first past the bound', () => {
    const cache = new RequestCache(100);
    cache.hold('a', held('a'.repeat(40)));
    cache.hold('b', held('b'.repeat(40)));
    expect(cache.heldFor('a')?.text).toBe('a'.repeat(40));
    // 'b' is now the least recently used: it goes when 'c' needs the room.
    cache.hold('c', held('c'.repeat(40)));
    expect(cache.heldFor('b')).toBeUndefined();
    expect(cache.heldFor('a')).toBeDefined();
    expect(cache.heldFor('c')).toBeDefined();
    // A run's newer text replaces its older one and is counted once.
    cache.hold('a', held('A'.repeat(50)));
    expect(cache.heldFor('a')?.text).toBe('A'.repeat(50));
    expect(cache.heldFor('c')).toBeDefined();
  });

  it('drops parsed requests before held texts, and keeps a text larger than the bound alone', () => {
    const cache = new RequestCache(100);
    cache.hold('a', held('a'.repeat(60)));
    cache.set('digest-a', loaded('a'.repeat(60)), 60);
    expect(cache.get('digest-a')).toBeUndefined();
    expect(cache.heldFor('a')).toBeDefined();
    cache.hold('big', held('x'.repeat(500)));
    expect(cache.heldFor('a')).toBeUndefined();
    expect(cache.heldFor('big')?.text).toHaveLength(500);
  });
});
