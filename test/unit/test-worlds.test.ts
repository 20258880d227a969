import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const e2e = join(__dirname, '..', 'e2e');

describe('end-to-end tests name the worlds they use', () => {
  it('no file keeps a world in a variable of its own: tests take startWorld or world (test/support/fixtures.ts)', () => {
    const kept = readdirSync(e2e)
      .filter((file) => file.endsWith('.test.ts'))
      .flatMap((file) =>
        readFileSync(join(e2e, file), 'utf8')
          .split('\n')
          .flatMap((line, index) => (/^\s*let world\b/.test(line) ? [`${file}:${index + 1}`] : [])),
      );
    expect(kept).toEqual([]);
  });
});
