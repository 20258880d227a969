import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';

/** Every regular file under a folder (not PostgreSQL's socket). */
function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return filesUnder(join(folder, entry.name));
    return entry.isFile() ? [join(folder, entry.name)] : [];
  });
}

/**
 * Occurrences of `needle` in the server's storage: the dev server's SQLite files (the database and its
 * write-ahead log), or every file of the cluster's PostgreSQL (tables and WAL; its bytea columns are
 * stored uncompressed there, see support/temporal-cluster.ts, but in chunks of about 2 KB: a needle
 * written across two chunks is missed, so a check of absence there goes with a check that something
 * written beside it is found).
 */
export function occurrencesInDatabase(needle: string): number {
  const storage = inject('temporalStorage');
  const paths = inject('temporalKind') === 'cluster' ? filesUnder(storage) : [storage, `${storage}-wal`];
  let count = 0;
  for (const path of paths) {
    if (!existsSync(path)) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      // PostgreSQL removes and renames files as it goes (WAL segments, statistics).
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const pattern = Buffer.from(needle, 'utf8');
    for (let at = bytes.indexOf(pattern); at >= 0; at = bytes.indexOf(pattern, at + 1)) count += 1;
  }
  return count;
}
