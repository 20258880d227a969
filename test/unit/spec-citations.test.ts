import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const spec = readFileSync(join(root, 'docs', 'spec', 'context-model.md'), 'utf8');

/** The spec's numbered sections, from its headings ("## 7. The ReAct loop", "### 7.5 The tool budget", "### 10.a ..."). */
const sections = new Set([...spec.matchAll(/^#{2,3} (\d+(?:\.[0-9a-z]+)?)\.? /gm)].map((match) => match[1]!));

function files(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.(ts|md)$/.test(name) ? [path] : [];
  });
}

/** What cites the spec: the README, ARCHITECTURE.md, the sources and the docs (the spec itself aside). */
const citing = () =>
  [
    join(root, 'README.md'),
    join(root, 'ARCHITECTURE.md'),
    ...files(join(root, 'src')),
    ...files(join(root, 'docs')),
  ].filter((path) => !path.startsWith(join(root, 'docs', 'spec')));

describe('the spec the docs and the code cite is in the repository', () => {
  it('has its numbered sections', () => {
    for (const section of ['1.2', '3.5', '6.6', '7', '7.5', '7.8', '8.3', '10', '10.a'])
      expect(sections).toContain(section);
  });

  it('every "spec N.N", "spec section N" or "deviation 10.x" in src/, docs/, README.md and ARCHITECTURE.md names one of them', () => {
    const cited = citing().flatMap((path) =>
      [...readFileSync(path, 'utf8').matchAll(/\b(?:spec(?:'s)?(?: section)?|deviation) (\d+(?:\.[0-9a-z]+)?)\b/g)].map(
        (match) => ({
          where: relative(root, path),
          section: match[1]!,
        }),
      ),
    );
    expect(cited.length).toBeGreaterThan(50);
    expect(cited.filter(({ section }) => !sections.has(section))).toEqual([]);
  });

  it('nothing cites the spec where a clone cannot follow it (outside the repository)', () => {
    const outside = citing()
      .filter((path) => readFileSync(path, 'utf8').includes('../shared'))
      .map((path) => relative(root, path));
    expect(outside).toEqual([]);
  });
});
