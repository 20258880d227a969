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
 * stored uncompressed there, see support/temporal-cluster.ts, so a value is found as written).
 */
export function occurrencesInDatabase(needle: string): number {
  const storage = inject('temporalStorage');
  const paths = inject('temporalKind') === 'cluster' ? filesUnder(storage) : [storage, `${storage}-wal`];
  let count = 0;
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const bytes = readFileSync(path);
    const pattern = Buffer.from(needle, 'utf8');
    for (let at = bytes.indexOf(pattern); at >= 0; at = bytes.indexOf(pattern, at + 1)) count += 1;
  }
  return count;
}
