import { StorageDriverClaim, type Payload, type StorageDriver } from '@temporalio/common';
import { mkdir, readFile, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodePayload, encodePayload, isPayloadKey } from './payload-bytes';

/**
 * The embedded default for payloads by reference: a directory every worker and client on the machine
 * shares (`.patchloop/payloads`). Content-addressed, so retries and replays store nothing twice;
 * written atomically (a temporary file renamed into place), so a reader never sees half a payload. A
 * payload stored again has its modification time renewed: deleting files older than the retention
 * period never removes one a recent history still refers to.
 */
export class LocalDirectoryDriver implements StorageDriver {
  readonly name = 'patchloop-local';
  readonly type = 'patchloop.local-directory';

  constructor(readonly directory: string) {}

  async store(_context: unknown, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const { key, bytes } = encodePayload(payload);
        const file = this.file(key);
        // A file of the right size is this payload (its name is its hash): renew its age. One of another
        // size (a crash mid-write on a disk without rename atomicity) or one gone meanwhile is rewritten.
        if (!(await renewed(file, bytes.length))) {
          await mkdir(join(this.directory, key.slice(0, 2)), { recursive: true });
          const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
          await writeFile(temporary, bytes, { flush: true });
          await rename(temporary, file);
        }
        return new StorageDriverClaim({ key });
      }),
    );
  }

  async retrieve(_context: unknown, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const key = claim.claimData['key'];
        if (!isPayloadKey(key))
          throw new Error(`not a payload claim of ${this.name}: ${JSON.stringify(claim.claimData)}`);
        return decodePayload(key, await readFile(this.file(key)));
      }),
    );
  }

  private file(key: string): string {
    return join(this.directory, key.slice(0, 2), key);
  }
}

async function renewed(file: string, size: number): Promise<boolean> {
  try {
    if ((await stat(file)).size !== size) return false;
    const now = new Date();
    await utimes(file, now, now);
    return true;
  } catch {
    return false;
  }
}
