import { StorageDriverClaim, type Payload } from '@temporalio/common';
import { mkdtempSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalDirectoryDriver } from '../../src/storage/local-directory-driver';
import { encodePayload } from '../../src/storage/payload-bytes';

const payload = (text: string): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(JSON.stringify(text)),
});
const files = (folder: string) =>
  readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());

describe('the local payload store', () => {
  it('names payloads by the SHA-256 of their bytes: the same payload is stored once, and comes back intact', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-payloads-'));
    const driver = new LocalDirectoryDriver(folder);
    const big = payload('x'.repeat(300_000));
    const [first] = await driver.store({}, [big]);
    const [again, other] = await driver.store({}, [big, payload('y')]);
    expect(first!.claimData).toEqual({ key: encodePayload(big).key });
    expect(again!.claimData).toEqual(first!.claimData);
    expect(other!.claimData['key']).not.toBe(first!.claimData['key']);
    expect(files(folder)).toHaveLength(2);
    // Stored again, the file's age starts over (so age-based cleanup keeps what recent histories use).
    const file = join(folder, first!.claimData['key']!.slice(0, 2), first!.claimData['key']!);
    utimesSync(file, new Date(0), new Date(0));
    await driver.store({}, [big]);
    expect(statSync(file).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
    const [back] = await driver.retrieve({}, [first!]);
    expect(Buffer.from(back!.data!).toString()).toBe(JSON.stringify('x'.repeat(300_000)));
    expect(Buffer.from(back!.metadata!['encoding']!).toString()).toBe('json/plain');
  });

  it('refuses a corrupted payload and a claim that is not its own', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-payloads-'));
    const driver = new LocalDirectoryDriver(folder);
    const [claim] = await driver.store({}, [payload('intact')]);
    const key = claim!.claimData['key']!;
    writeFileSync(join(folder, key.slice(0, 2), key), 'tampered');
    await expect(driver.retrieve({}, [claim!])).rejects.toThrow(/is corrupt/);
    // Storing the payload again repairs the file (its size gave it away).
    await driver.store({}, [payload('intact')]);
    const [back] = await driver.retrieve({}, [claim!]);
    expect(Buffer.from(back!.data!).toString()).toBe('"intact"');
    await expect(driver.retrieve({}, [new StorageDriverClaim({ key: '../../etc/passwd' })])).rejects.toThrow(
      /not a payload claim/,
    );
  });
});
