import { runInNewContext } from 'node:vm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryRoot } from '../../support/repository';
import { afterEach, describe, expect, it } from 'vitest';
import { workflowBundleOptions } from '../../src/worker/create-worker';

describe('stack traces in workflow code', () => {
  afterEach(() => {
    delete process.env['PATCHLOOP_WORKFLOW_STACK_TRACES'];
  });

  it('are off by default: the bundle preloads workflows/stack-traces.ts first; PATCHLOOP_WORKFLOW_STACK_TRACES=1 keeps them', () => {
    const preloaded = (options: { preloadModules: string[] }) =>
      options.preloadModules.map((file) => file.replace(/^.*\/src\//, 'src/'));
    expect(preloaded(workflowBundleOptions())).toEqual([
      expect.stringMatching(/^src\/workflows\/stack-traces\.(ts|js)$/),
      expect.stringMatching(/^src\/workflows\/shared-modules\.(ts|js)$/),
      expect.stringMatching(/^src\/workflows\/index\.(ts|js)$/),
    ]);
    process.env['PATCHLOOP_WORKFLOW_STACK_TRACES'] = '1';
    expect(preloaded(workflowBundleOptions())).toEqual([
      expect.stringMatching(/^src\/workflows\/shared-modules\.(ts|js)$/),
      expect.stringMatching(/^src\/workflows\/index\.(ts|js)$/),
    ]);
  });

  it('the module leaves errors made in its context without frames, their message kept', () => {
    const source = readFileSync(join(repositoryRoot, 'src', 'workflows', 'stack-traces.ts'), 'utf8');
    // The module is one statement and an empty export: what is left once the export is gone is plain JavaScript.
    const script = `${source.replace('export {};', '')}\nnew Error('broken').stack`;
    // (A formatter another module installed in the process may end the stack with a newline.)
    expect((runInNewContext(script) as string).trimEnd()).toBe('Error: broken');
    expect(runInNewContext(`new Error('broken').stack`)).toMatch(/^Error: broken\n\s+at /);
  });
});
