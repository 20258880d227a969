import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryRoot, venvPython } from '../../support/repository';

export const referenceDriver = join(repositoryRoot, 'tools', 'reference', 'driver.py');

export type ReferenceOutcome = { ok: Record<string, unknown> } | { error: string };
export type ReferenceVariant = 'reference' | 'a' | 'b' | 'ab';
export type ReferenceResult = Record<ReferenceVariant, ReferenceOutcome>;

/** Runs the reference (SimpleLLMFunc 0.8.4) on many cases in one Python process. Never skips: a missing venv fails. */
export function runReference(cases: unknown[]): ReferenceResult[] {
  if (!existsSync(venvPython)) {
    throw new Error(
      `reference venv missing at ${venvPython}: run "bash scripts/setup.sh" (the test command does this)`,
    );
  }
  const input = cases.map((item) => JSON.stringify(item)).join('\n') + '\n';
  const result = spawnSync(venvPython, [referenceDriver], { input, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (result.status !== 0) throw new Error(`reference driver failed (${result.status}): ${result.stderr}`);
  const lines = result.stdout.trim().split('\n');
  if (lines.length !== cases.length) throw new Error(`reference answered ${lines.length} of ${cases.length} cases`);
  return lines.map((line) => JSON.parse(line) as ReferenceResult);
}
