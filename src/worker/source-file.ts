import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** A module of this package by its path under `src`, as source (tsx, tests) or compiled (dist). */
export function sourceFile(...path: string[]): string {
  const source = `${join(__dirname, '..', ...path)}.ts`;
  return existsSync(source) ? source : `${join(__dirname, '..', ...path)}.js`;
}

/** The package's own folder (where package.json is), from the sources (src/) or the compiled code (dist/src/). */
export function packageRoot(): string {
  const fromSources = join(__dirname, '..', '..');
  return existsSync(join(fromSources, 'package.json')) ? fromSources : join(fromSources, '..');
}
