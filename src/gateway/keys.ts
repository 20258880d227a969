import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import { PRINCIPAL_NAME, PrincipalName } from '../runtime';
import type { Principal } from './principal';

/**
 * API keys: `pl_<id>_<secret>`. The keys file keeps each key's id, its principal and the SHA-256 of the
 * whole key, never the key: a key is printed once, when it is made. Keys are 192 random bits, so a
 * plain hash (no salt, no stretching) is enough to make a leaked file useless for signing in.
 */
export const ApiKeyRecord = sharedSchema('gateway/keys#ApiKeyRecord', () =>
  z.strictObject({
    id: z.string().regex(/^[a-f0-9]{12}$/),
    principal: PrincipalName,
    admin: z.boolean(),
    sha256: z.string().regex(/^[a-f0-9]{64}$/),
    created_at: z.string(),
    revoked_at: z.string().optional(),
  }),
);
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

export const KeysFile = sharedSchema('gateway/keys#KeysFile', () =>
  z.strictObject({
    version: z.literal(1),
    keys: z.array(ApiKeyRecord),
  }),
);
export type KeysFile = z.infer<typeof KeysFile>;

const KEY_SHAPE = /^pl_([a-f0-9]{12})_([A-Za-z0-9_-]{32})$/;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The keys file, or an empty one when it does not exist yet; a file that is not one is an error naming it. */
export function readKeysFile(path: string): KeysFile {
  if (!existsSync(path)) return { version: 1, keys: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path} is not a patchloop keys file: ${(error as Error).message}`);
  }
  const checked = KeysFile.safeParse(parsed);
  if (!checked.success) throw new Error(`${path} is not a patchloop keys file: ${checked.error.issues[0]?.message}`);
  return checked.data;
}

/** Writes the file whole (a temporary file renamed over it), readable by its owner only. */
function writeKeysFile(path: string, file: KeysFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

/** Makes a key for a principal and records its hash: the key itself exists only in what this returns. */
export function createKey(path: string, principal: string, options: { admin?: boolean; now?: Date } = {}) {
  if (!PRINCIPAL_NAME.test(principal))
    throw new Error(
      `a principal's name is 1 to 64 letters, digits, '.', '_', '-' or '@' (not ${JSON.stringify(principal)})`,
    );
  const file = readKeysFile(path);
  const id = randomBytes(6).toString('hex');
  const key = `pl_${id}_${randomBytes(24).toString('base64url')}`;
  const record: ApiKeyRecord = {
    id,
    principal,
    admin: options.admin ?? false,
    sha256: sha256(key),
    created_at: (options.now ?? new Date()).toISOString(),
  };
  writeKeysFile(path, { version: 1, keys: [...file.keys, record] });
  return { key, record };
}

/** Revokes every live key whose id or principal is `which`; how many it revoked. */
export function revokeKeys(path: string, which: string, now = new Date()): number {
  const file = readKeysFile(path);
  let revoked = 0;
  const keys = file.keys.map((record) => {
    if (record.revoked_at || (record.id !== which && record.principal !== which)) return record;
    revoked += 1;
    return { ...record, revoked_at: now.toISOString() };
  });
  if (revoked > 0) writeKeysFile(path, { version: 1, keys });
  return revoked;
}

/**
 * The keys a server checks requests against, read again when the file changes (a key made or revoked
 * while `patchloop serve` runs counts from its next request).
 */
export class KeyRing {
  private loaded: { stamp: string; byId: Map<string, ApiKeyRecord> } | undefined;

  constructor(readonly path: string) {}

  private current(): Map<string, ApiKeyRecord> {
    const stamp = existsSync(this.path) ? `${statSync(this.path).mtimeMs}:${statSync(this.path).size}` : 'none';
    if (this.loaded?.stamp !== stamp) {
      const live = readKeysFile(this.path).keys.filter((record) => !record.revoked_at);
      this.loaded = { stamp, byId: new Map(live.map((record) => [record.id, record])) };
    }
    return this.loaded.byId;
  }

  /** The principal a presented key stands for, or undefined for anything that is not a live key. */
  principalOf(key: string): Principal | undefined {
    const shape = KEY_SHAPE.exec(key);
    if (!shape) return undefined;
    const record = this.current().get(shape[1]!);
    if (!record) return undefined;
    const presented = Buffer.from(sha256(key), 'hex');
    const stored = Buffer.from(record.sha256, 'hex');
    if (!timingSafeEqual(presented, stored)) return undefined;
    return { name: record.principal, admin: record.admin };
  }
}
