import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encryptionFromEnvironment, parseKey } from '../../src/config/environment';
import { ENCRYPTED_ENCODING, EncryptionCodec } from '../../src/storage/encryption-codec';

const plain = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"secret":"canary-42"}') };
const key = () => randomBytes(32).toString('base64');

describe('payload encryption (AES-256-GCM)', () => {
  it('round-trips a payload, metadata included, and leaves no plaintext', async () => {
    const codec = new EncryptionCodec({ active: parseKey(key(), 'k1'), previous: [] });
    const [encrypted] = await codec.encode([plain]);
    expect(Buffer.from(encrypted!.metadata!['encoding']!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(encrypted!.metadata!['encryption-key-id']!).toString()).toBe('k1');
    expect(Buffer.from(encrypted!.data!).includes('canary-42')).toBe(false);
    expect(Buffer.from(encrypted!.data!).includes('json/plain')).toBe(false);
    const [decoded] = await codec.decode([encrypted!]);
    expect(Buffer.from(decoded!.data!).toString()).toBe('{"secret":"canary-42"}');
    expect(Buffer.from(decoded!.metadata!['encoding']!).toString()).toBe('json/plain');
    // A fresh IV each time: equal plaintexts do not give equal ciphertexts.
    const [again] = await codec.encode([plain]);
    expect(Buffer.from(again!.data!).equals(Buffer.from(encrypted!.data!))).toBe(false);
  });

  it('rotation: the new key encrypts, previous keys still decrypt, an unknown key fails clearly', async () => {
    const oldKey = key();
    const before = new EncryptionCodec({ active: parseKey(oldKey, 'old'), previous: [] });
    const [written] = await before.encode([plain]);
    const rotated = new EncryptionCodec(
      encryptionFromEnvironment({
        PATCHLOOP_ENCRYPTION_KEY: key(),
        PATCHLOOP_ENCRYPTION_KEY_ID: 'new',
        PATCHLOOP_ENCRYPTION_PREVIOUS_KEYS: `old:${oldKey}`,
      })!,
    );
    expect(Buffer.from((await rotated.decode([written!]))[0]!.data!).toString()).toBe('{"secret":"canary-42"}');
    const [fresh] = await rotated.encode([plain]);
    expect(Buffer.from(fresh!.metadata!['encryption-key-id']!).toString()).toBe('new');
    await expect(before.decode([fresh!])).rejects.toThrow(/key 'new', which this process does not hold/);
  });

  it('refuses tampered ciphertext and keys of the wrong size', async () => {
    const codec = new EncryptionCodec({ active: parseKey(key(), 'k'), previous: [] });
    const [encrypted] = await codec.encode([plain]);
    const data = Buffer.from(encrypted!.data!);
    data[20] = data[20]! ^ 1;
    await expect(codec.decode([{ ...encrypted!, data }])).rejects.toThrow();
    expect(() => parseKey(Buffer.from('short').toString('base64'))).toThrow(/32 bytes/);
    expect(encryptionFromEnvironment({})).toBeUndefined();
    // Payloads written without encryption still read.
    expect(await codec.decode([plain])).toEqual([plain]);
  });
});
