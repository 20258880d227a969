import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The one rule these tests are about, without type information (no TypeScript program to load: fast).
const eslint = new ESLint({
  cwd: `${__dirname}/../..`,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: false } } },
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-syntax',
});

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.map((message) => message.ruleId ?? message.message);
}

describe('exports say where a name lives', () => {
  // Each folder sets no-restricted-syntax its own way (pure code, workflows, the failure catalogue):
  // the rule against export * is in every one of them.
  for (const file of [
    'src/runtime/probe.ts',
    'src/workflows/probe.ts',
    'src/cli/probe.ts',
    'src/common/failure-types.ts',
  ]) {
    it(`rejects export * in ${file}`, async () => {
      expect(await ruleIds("export * from './agent';\n", file)).toContain('no-restricted-syntax');
      expect(await ruleIds("export type * from './agent';\n", file)).toContain('no-restricted-syntax');
    });
  }

  it('takes explicit names, types marked as types', async () => {
    expect(
      await ruleIds(
        "export { AgentSpec } from './agent';\nexport type { AgentDefinitionInput } from './agent';\n",
        'src/runtime/probe.ts',
      ),
    ).toEqual([]);
  });
});
