import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../support/temporal';

const sourceRoot = join(__dirname, '..', '..', 'src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(folder, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(folder, entry.name)]
        : [],
  );
}

describe('schemas shared by the runs of a worker thread', () => {
  const files = sourceFiles(sourceRoot);

  it('builds every module-level zod schema through sharedSchema, under a key unique to its file and name', () => {
    const keys: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      // A module-level schema built directly would be built again by every run of the workflow bundle.
      expect(text, relative(sourceRoot, file)).not.toMatch(/^(export )?const \w+(: [^=]+)? = z\./m);
      const name = relative(sourceRoot, file).replace(/\.ts$/, '');
      for (const [, constant, key] of text.matchAll(/const (\w+)[^=]*= sharedSchema\(\s*'([^']+)'/g)) {
        expect(key).toBe(`${name}#${constant}`);
        keys.push(key!);
      }
    }
    expect(keys.length).toBeGreaterThan(60);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('preloads zod and the schema registry into the scope the bundle shares', async () => {
    const { code } = await workflowBundle();
    const preload = /preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1] ?? '';
    expect(preload).toContain('./src/workflows/shared-modules.ts');
    // The shared module really imports zod (a bare import would be dropped: zod declares no side effects).
    const shared = code.slice(code.indexOf('/***/ "./src/workflows/shared-modules.ts"'));
    expect(shared.slice(0, 2_000)).toMatch(/__webpack_require__\(\/\*! zod \*\/ "\.\/node_modules\/zod\//);
  });
});
