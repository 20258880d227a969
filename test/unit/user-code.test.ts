import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseCommand } from '../../src/cli/arguments';
import { WORKER_SYNTAX } from '../../src/cli/syntax';
import { defineTool } from '../../src/tools/define-tool';
import { isMultimodalResult } from '../../src/tools/images';
import { isConfigurationError } from '../../src/runtime';

describe('worker --fake-model [SCRIPT]', () => {
  const fakeModel = (...args: string[]) => parseCommand(args, WORKER_SYNTAX).values['fake-model'];

  it('stands alone (the demo model) or names a script, before or after other options', () => {
    expect(fakeModel('--fake-model')).toBe('');
    expect(fakeModel('--fake-model', '--tools', 't.ts')).toBe('');
    expect(fakeModel('--tools', 't.ts', '--fake-model')).toBe('');
    expect(fakeModel('--fake-model', 'script.json', '--verbose')).toBe('script.json');
    expect(fakeModel('--fake-model=script.ts')).toBe('script.ts');
    expect(fakeModel('--verbose')).toBeUndefined();
  });
});

describe('values from another copy of patchloop or zod', () => {
  it("image results are recognised by their registered kind, not this copy's classes", () => {
    const kind = Symbol.for('patchloop.image-value');
    expect(isMultimodalResult({ [kind]: 'image_url', url: 'https://example.com/a.png' })).toBe(true);
    expect(isMultimodalResult({ [kind]: 'described_images', text: 'a chart', images: [] })).toBe(true);
    expect(isMultimodalResult({ url: 'https://example.com/a.png' })).toBe(false);
  });

  it("a schema converts itself with its own zod, and a zod 3 schema is refused by the tool's name", () => {
    const parameters = z.object({ city: z.string().describe('The city') });
    const tool = defineTool({ name: 'weather', description: 'w', parameters, execute: () => '' });
    expect(tool.descriptor.parameters).toMatchObject({ properties: { city: { description: 'The city' } } });
    // zod 3's schemas have no `_zod`: what defineTool gets from a project still on zod 3.
    const zod3 = { _def: { typeName: 'ZodObject' }, safeParse: () => ({ success: true }) };
    let refusal: unknown;
    try {
      defineTool({ name: 'old', description: 'o', parameters: zod3 as never, execute: () => '' });
    } catch (error) {
      refusal = error;
    }
    expect(isConfigurationError(refusal)).toBe(true);
    expect((refusal as Error).message).toBe(
      "tool 'old': parameters: a schema must be a zod 4 schema (zod 3 was given: install zod 4, or with zod 3.25 import { z } from 'zod/v4')",
    );
  });
});
