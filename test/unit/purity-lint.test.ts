import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: `${__dirname}/../..` });

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.map((message) => message.ruleId ?? message.message);
}

describe('purity lint rules', () => {
  for (const folder of ['src/context', 'src/workflows']) {
    it(`rejects Node built-ins, provider clients and non-type activity imports in ${folder}`, async () => {
      const ids = await ruleIds(
        "import { readFileSync } from 'node:fs';\nimport OpenAI from 'openai';\nimport * as acts from '../activities';\nexport const x = [readFileSync, OpenAI, acts];\n",
        `${folder}/probe.ts`,
      );
      expect(ids.filter((id) => id === '@typescript-eslint/no-restricted-imports')).toHaveLength(3);
    });

    it(`rejects sandbox-missing globals and randomness in ${folder}`, async () => {
      const ids = await ruleIds(
        'export const x = [Buffer.from("a"), structuredClone({}), Math.random()];\n',
        `${folder}/probe.ts`,
      );
      expect(ids).toContain('no-restricted-globals');
      expect(ids).toContain('no-restricted-properties');
    });
  }

  it('allows workflows a type-only import of the activities (proxyActivities<Activities>)', async () => {
    const ids = await ruleIds(
      "import type * as acts from '../activities';\nexport type X = typeof acts;\n",
      'src/workflows/probe.ts',
    );
    expect(ids).toEqual([]);
  });

  it('rejects the clock in the pure context core', async () => {
    const ids = await ruleIds('export const x = [Date.now(), new Date()];\n', 'src/context/probe.ts');
    expect(ids).toEqual(['no-restricted-properties', 'no-restricted-syntax']);
  });

  for (const folder of ['src/activities', 'src/workflows', 'src/context']) {
    it(`rejects failures built from loose type strings in ${folder} (the catalogue is FailureType)`, async () => {
      const ids = await ruleIds(
        "import { ApplicationFailure } from '@temporalio/common';\n" +
          "export const a = ApplicationFailure.nonRetryable('no', 'UnknownAgnet');\n" +
          "export const b = ApplicationFailure.create({ type: 'Oops', message: 'no' });\n" +
          "export const c = { retry: { nonRetryableErrorTypes: ['UnknownAgent'] } };\n",
        `${folder}/probe.ts`,
      );
      expect(ids.filter((id) => id === 'no-restricted-syntax')).toHaveLength(3);
    });
  }

  it('does not restrict activity code', async () => {
    const ids = await ruleIds(
      "import { readFileSync } from 'node:fs';\nexport const x = [readFileSync, Buffer.from('a')];\n",
      'src/activities/probe.ts',
    );
    expect(ids).toEqual([]);
  });
});

describe('layer rules (ARCHITECTURE.md)', () => {
  it.each([
    ['src/activities/probe.ts', "import { agentRun } from '../workflows/agent-run';\nexport const x = agentRun;\n"],
    [
      'src/client/probe.ts',
      "import { createPatchloopWorker } from '../worker/create-worker';\nexport const x = createPatchloopWorker;\n",
    ],
    ['src/common/probe.ts', "import { sinks } from '../workflows/sinks';\nexport const x = sinks;\n"],
    ['src/runtime/probe.ts', "import { abortSignal } from '../common';\nexport const x = abortSignal;\n"],
    ['src/context/probe.ts', "import type { AgentSpec } from '../runtime';\nexport type X = AgentSpec;\n"],
    [
      'src/workflows/probe.ts',
      "import { SecretRedactor } from '../activities/redact';\nexport const x = SecretRedactor;\n",
    ],
  ])('rejects an import against the layers in %s', async (file, code) => {
    expect(await ruleIds(code, file)).toContain('import-x/no-restricted-paths');
  });

  it.each([
    ['src/activities/probe.ts', "import { abortSignal } from '../common';\nexport const x = abortSignal;\n"],
    [
      'src/client/probe.ts',
      "import { configFromEnvironment } from '../config/environment';\nexport const x = configFromEnvironment;\n",
    ],
    [
      'src/cli/probe.ts',
      "import { createPatchloopWorker } from '../worker/create-worker';\nexport const x = createPatchloopWorker;\n",
    ],
  ])('allows an import down the layers in %s', async (file, code) => {
    expect(await ruleIds(code, file)).toEqual([]);
  });
});

describe('test/ is for tests only', () => {
  // Files of these folders linted with other text (the default project takes at most 8 probe files).
  const files = { bench: 'bench/world.ts', scripts: 'scripts/chaos.ts', support: 'support/redis.ts' };

  it.each(Object.entries(files))('rejects an import of test/ in %s', async (_folder, file) => {
    const code = "import { startWorld } from '../test/support/temporal';\nexport const x = startWorld;\n";
    expect(await ruleIds(code, file)).toContain('import-x/no-restricted-paths');
  });

  it.each([files.bench, files.scripts])('allows %s the shared support/', async (file) => {
    const code = "import { startRedis } from '../support/redis';\nexport const x = startRedis;\n";
    expect(await ruleIds(code, file)).toEqual([]);
  });
});
