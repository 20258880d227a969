import { existsSync, readFileSync } from 'node:fs';
import { inject } from 'vitest';

/** Occurrences of `needle` in the dev server's SQLite files (the database and its write-ahead log). */
export function occurrencesInDatabase(needle: string): number {
  const file = inject('temporalDbFile');
  let count = 0;
  for (const path of [file, `${file}-wal`]) {
    if (!existsSync(path)) continue;
    const bytes = readFileSync(path);
    const pattern = Buffer.from(needle, 'utf8');
    for (let at = bytes.indexOf(pattern); at >= 0; at = bytes.indexOf(pattern, at + 1)) count += 1;
  }
  return count;
}
