import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import timeouts from '../timeouts.json';

const root = join(__dirname, '..');

/**
 * The bounds a test file gives its own tests and hooks: `{ timeout: N }` before the body, or N after it
 * (`}, N);`). Polls and waits name their own patience and are not read here.
 */
export function ownTimeouts(source: string): { line: number; ms: number }[] {
  const found: { line: number; ms: number }[] = [];
  source.split('\n').forEach((text, index) => {
    const before = /^\s*(?:it|test|describe)(?:\.\w+)*\(.*\{ timeout: ([\d_]+) \}/.exec(text);
    const after = /^\s*\}\s*,\s*([\d_]+)\);?\s*$/.exec(text);
    const value = before?.[1] ?? after?.[1];
    if (value !== undefined) found.push({ line: index + 1, ms: Number(value.replaceAll('_', '')) });
  });
  return found;
}

describe('test timeouts are bounds on a hang, never on speed', () => {
  it('reads both ways a test names its bound', () => {
    const source = [
      "it('a', { timeout: 40_000 }, async () => {",
      '});',
      "it('b', async () => {",
      '}, 20_000);',
      'await expect.poll(() => x, { timeout: 10_000 }).toBe(1);',
    ].join('\n');
    expect(ownTimeouts(source)).toEqual([
      { line: 1, ms: 40_000 },
      { line: 4, ms: 20_000 },
    ]);
  });

  for (const [folder, floor] of [
    ['unit', timeouts.unit],
    ['e2e', timeouts.e2e],
  ] as const) {
    it(`no ${folder} test lowers the project's bound (${floor} ms): a loaded machine would fail it`, () => {
      const lowered = readdirSync(join(root, folder))
        .filter((file) => file.endsWith('.test.ts'))
        .flatMap((file) =>
          ownTimeouts(readFileSync(join(root, folder, file), 'utf8'))
            .filter(({ ms }) => ms < floor)
            .map(({ line, ms }) => `${folder}/${file}:${line} (${ms} ms)`),
        );
      expect(lowered).toEqual([]);
    });
  }
});
