import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createKey, KeyRing, readKeysFile, revokeKeys } from '../../src/gateway/keys';
import { RateLimited, RateLimits } from '../../src/gateway/rate-limits';

const keysFile = () => join(mkdtempSync(join(tmpdir(), 'patchloop-keys-')), 'keys.json');

describe('API keys', () => {
  it('are printed once: the file keeps an id, the principal and a hash, owner-readable only', () => {
    const file = keysFile();
    const { key, record } = createKey(file, 'billing-service', { now: new Date('2026-12-06T10:00:00Z') });
    expect(key).toMatch(/^pl_[a-f0-9]{12}_[A-Za-z0-9_-]{32}$/);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(key);
    expect(text).not.toContain(key.slice(16));
    expect(readKeysFile(file)).toEqual({
      version: 1,
      keys: [{ ...record, principal: 'billing-service', admin: false, created_at: '2026-12-06T10:00:00.000Z' }],
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('stand for their principal; a changed secret, another shape or a revoked key stands for nobody', () => {
    const file = keysFile();
    const alice = createKey(file, 'alice').key;
    const ops = createKey(file, 'ops', { admin: true }).key;
    const ring = new KeyRing(file);
    expect(ring.principalOf(alice)).toEqual({ name: 'alice', admin: false });
    expect(ring.principalOf(ops)).toEqual({ name: 'ops', admin: true });
    const last = alice.at(-1) === 'A' ? 'B' : 'A';
    for (const wrong of [
      `${alice.slice(0, -1)}${last}`,
      alice.slice(0, -1),
      `x${alice}`,
      '',
      'Bearer',
      alice.replace('pl_', 'sk_'),
    ])
      expect(ring.principalOf(wrong)).toBeUndefined();
    // A key made or revoked while a gateway runs counts from its next request.
    const bob = createKey(file, 'bob').key;
    expect(ring.principalOf(bob)).toEqual({ name: 'bob', admin: false });
    expect(revokeKeys(file, 'alice')).toBe(1);
    expect(ring.principalOf(alice)).toBeUndefined();
    expect(ring.principalOf(bob)).toEqual({ name: 'bob', admin: false });
    expect(revokeKeys(file, 'alice')).toBe(0);
  });

  it('refuse a name that is no principal, and a file that is no keys file, naming it', () => {
    const file = keysFile();
    for (const name of ['', 'a b', "o'brien", 'x'.repeat(65)])
      expect(() => createKey(file, name)).toThrow(/1 to 64 letters, digits/);
    writeFileSync(file, '{"keys": "nope"}');
    expect(() => readKeysFile(file)).toThrow(`${file} is not a patchloop keys file`);
    expect(() => new KeyRing(file).principalOf('pl_0123456789ab_' + 'a'.repeat(32))).toThrow(file);
  });
});

describe('per-principal limits', () => {
  it('allow N starts in a sliding minute, then say when the next one fits; others are not affected', async () => {
    let now = 1_000_000;
    const limits = new RateLimits(
      { runsPerMinute: 2, concurrentRuns: 100 },
      async () => 0,
      () => now,
    );
    await limits.admit('alice');
    now += 20_000;
    await limits.admit('alice');
    now += 10_000;
    const refused = await limits.admit('alice').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimited);
    // The first start leaves the minute 30 s from now.
    expect((refused as RateLimited).retryAfterSeconds).toBe(30);
    expect((refused as RateLimited).message).toBe('alice started 2 runs in the last minute (the limit is 2)');
    await limits.admit('bob');
    now += 30_000;
    await limits.admit('alice');
  });

  it('refuse a start while the principal has as many runs going on as its limit, counting nothing', async () => {
    let going = 3;
    const limits = new RateLimits({ runsPerMinute: 1, concurrentRuns: 3 }, async () => going);
    const refused = await limits.admit('alice').catch((error: unknown) => error);
    expect(refused).toMatchObject({ retryAfterSeconds: 5, message: 'alice has 3 runs going on (the limit is 3)' });
    going = 2;
    // The refused start was not counted against the minute.
    await limits.admit('alice');
  });
});
