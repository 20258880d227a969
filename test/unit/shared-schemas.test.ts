import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
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
      // Nor schemas inside a module-level object or array literal (fields spread into a z.object later).
      for (const [literal] of text.matchAll(/^(?:export )?const \w+[^=\n]*= [{[]\n[\s\S]*?^[}\]]/gm))
        expect(literal, relative(sourceRoot, file)).not.toMatch(/\bz\.\w+\(/);
      const name = relative(sourceRoot, file).replace(/\.ts$/, '');
      for (const [, constant, key] of text.matchAll(/const (\w+)[^=]*= sharedSchema\(\s*'([^']+)'/g)) {
        expect(key).toBe(`${name}#${constant}`);
        keys.push(key!);
      }
    }
    expect(keys.length).toBeGreaterThan(60);
    expect(new Set(keys).size).toBe(keys.length);
  });

  // What the workflow bundle holds: these folders, reached from src/workflows.
  const workflowFiles = ['context', 'runtime', 'workflows', 'common'].flatMap((folder) =>
    sourceFiles(join(sourceRoot, folder)),
  );

  it('keeps no state at module level in workflow code: its runs share one instance of each module', () => {
    for (const file of workflowFiles) {
      const text = readFileSync(file, 'utf8');
      // A module-level variable would be one run's state seen by the next; maps other than the schema
      // registry would be too (the SDK freezes what shared modules export, not what a Map holds).
      expect(text, relative(sourceRoot, file)).not.toMatch(/^(export )?(let|var) /m);
      expect(text, relative(sourceRoot, file)).not.toMatch(
        /^(export )?const \w+(: [^=]+)? = new (Set|WeakMap|WeakSet)\b/m,
      );
      if (!file.endsWith('shared-schema.ts') && !file.endsWith('summary.ts'))
        expect(text, relative(sourceRoot, file)).not.toMatch(/^(export )?const \w+(: [^=]+)? = new Map\b/m);
    }
  });

  // zod's instanceof reads the value's internals: a proxy (the sinks') answers it with a throw.
  const isSchema = (value: object): boolean => {
    try {
      return value instanceof z.ZodType;
    } catch {
      return false;
    }
  };

  it('shields every schema that a workflow module exports from the SDK’s freeze of shared modules', async () => {
    const unshielded: string[] = [];
    for (const file of workflowFiles) {
      const module = (await import(file)) as Record<string, unknown>;
      const seen = new WeakSet<object>();
      // The SDK's freeze walks exports and their own properties, and stops where reading one throws.
      const walk = (value: unknown, path: string): void => {
        if (value === null || typeof value !== 'object' || seen.has(value)) return;
        seen.add(value);
        if (isSchema(value)) {
          if (!Object.getOwnPropertyDescriptor(value, '0')?.get) unshielded.push(path);
          return;
        }
        for (const key of Object.getOwnPropertyNames(value))
          walk((value as Record<string, unknown>)[key], `${path}.${key}`);
      };
      for (const [name, value] of Object.entries(module)) walk(value, `${relative(sourceRoot, file)}#${name}`);
    }
    expect(unshielded).toEqual([]);
  });

  it('preloads zod, the schema registry and the workflows into the scope the bundle shares', async () => {
    const { code } = await workflowBundle();
    const preload = /preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1] ?? '';
    expect(preload).toContain('./src/workflows/shared-modules.ts');
    expect(preload).toContain('./src/workflows/index.ts');
    // The shared module really imports zod (a bare import would be dropped: zod declares no side effects).
    const shared = code.slice(code.indexOf('/***/ "./src/workflows/shared-modules.ts"'));
    expect(shared.slice(0, 2_000)).toMatch(/__webpack_require__\(\/\*! zod \*\/ "\.\/node_modules\/zod\//);
  });
});
