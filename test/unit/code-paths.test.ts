import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The documentation names only source files that exist: a file moved or renamed takes its mentions in
 * README.md, ARCHITECTURE.md and docs/ with it. A path with a folder (`workflows/run/run-state.ts`,
 * `src/runtime/budget.ts`, `test/e2e/mcp-tools.test.ts`) resolves from the repository's root or from
 * `src/`, `test/`, `scripts/`, `bench/`; a bare file name (`tool-step.ts`) names a file somewhere in
 * those folders. Globs (`runtime/*.ts`) and placeholders (`<file>`) are not paths.
 */
const root = join(__dirname, '..', '..');
const folders = ['', 'src', 'test', 'scripts', 'bench'];
const extensions = /\.(ts|js|mjs|cjs|json|jsonc|md|sh|py|yml)$/;

function files(folder: string, keep: (name: string) => boolean): string[] {
  return readdirSync(folder).flatMap((name) => {
    if (name === 'node_modules' || name.startsWith('.')) return [];
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return files(path, keep);
    return keep(name) ? [path] : [];
  });
}

const pages = [
  join(root, 'README.md'),
  join(root, 'ARCHITECTURE.md'),
  ...files(join(root, 'docs'), (name) => name.endsWith('.md')),
];

/** The names of every file the paths may resolve to, for bare file names. */
const knownNames = new Set(
  folders
    .filter((folder) => folder !== '')
    .concat('bin', 'deploy', 'examples')
    .flatMap((folder) => files(join(root, folder), () => true).map((path) => basename(path))),
);

/** Backticked names that look like paths but name no file of this repository, and why. */
const notOurs = new Map([
  ['tools.js', "a user's tools module, in an example command"],
  ['NN-short-name.json', 'the pattern of a vector file name'],
  ['src/lib/services/data-encoder.ts', "a file of the Temporal UI's repository"],
  ['patchloop/payloads/', 'an S3 key prefix'],
]);

/**
 * The backticked file paths of a page, outside code blocks: a name with a file extension, or a folder of
 * two segments or more (`cli/commands/`). Names starting with a dot (`.ts`, generated folders) are not.
 */
function namedPaths(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/`([^`\s]+)`/g)]
    .map((match) => match[1]!)
    .filter((text) => /^[\w@-][\w.@-]*(\/[\w.@-]+)*\/?$/.test(text))
    .filter((text) => extensions.test(text) || /^[^/]+\/.+\/$/.test(text))
    .filter((text) => !notOurs.has(text));
}

function exists(path: string): boolean {
  if (!path.includes('/')) return knownNames.has(path) || existsSync(join(root, path));
  return folders.some((folder) => existsSync(join(root, folder, path)));
}

/** The rows of ARCHITECTURE.md's "Where a change goes" table. */
function changeRows(): string[] {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const section = text.split(/^## Where a change goes$/m)[1] ?? '';
  return section
    .split(/^## /m)[0]!
    .split('\n')
    .filter((line) => line.startsWith('|') && !line.startsWith('| ---') && !line.startsWith('| change |'));
}

describe('the paths the documentation names', () => {
  it('are files of the repository', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const path of namedPaths(readFileSync(page, 'utf8'))) {
        checked += 1;
        if (!exists(path)) missing.push(`${relative(root, page)}: ${path}`);
      }
    }
    expect(checked).toBeGreaterThan(200);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('keep each row of "Where a change goes" to one short line', () => {
    const rows = changeRows();
    expect(rows.length).toBeGreaterThan(20);
    expect(rows.filter((row) => row.length > 250).map((row) => `${row.length}: ${row.slice(0, 80)}…`)).toEqual([]);
  });
});
