import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli';

/**
 * The spec's vectors through the public command, as another language's test harness would run them:
 * `patchloop compile -` with the vector on standard input, its output (or its error object) on stdout.
 */
const folder = join(__dirname, '..', 'fixtures', 'conformance');
const vectors = readdirSync(folder)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({
    text: readFileSync(join(folder, name), 'utf8'),
    vector: JSON.parse(readFileSync(join(folder, name), 'utf8')),
  }));

describe.concurrent('patchloop compile on every conformance vector', () => {
  for (const { text, vector } of vectors) {
    it(vector.id, async () => {
      const result = await runCli(['compile', '-'], {}, text);
      const printed = JSON.parse(result.stdout) as Record<string, unknown>;
      if ('error' in vector.expected) {
        expect([result.code, result.stderr]).toEqual([1, '']);
        expect(printed).toStrictEqual({
          error: { type: 'LinkageError', message: vector.expected.error.message as string },
        });
      } else {
        expect([result.code, result.stderr]).toEqual([0, '']);
        expect(printed).toStrictEqual(vector.expected);
      }
    });
  }

  it('invalid input and a missing file are error objects on stdout too; --json is accepted', async () => {
    const invalid = await runCli(['compile', '-', '--json'], {}, '{"transcript": 3}');
    expect(invalid.code).toBe(1);
    expect(JSON.parse(invalid.stdout)).toMatchObject({ error: { type: 'InvalidInput' } });
    const notJson = await runCli(['compile', '-'], {}, '{"transcript": [');
    expect([notJson.code, JSON.parse(notJson.stdout).error.type]).toEqual([1, 'InvalidJson']);
    const missing = await runCli(['compile', join(folder, 'no-such-vector.json')], {});
    expect([missing.code, JSON.parse(missing.stdout).error.type]).toEqual([1, 'ReadError']);
    const usage = await runCli(['compile'], {});
    expect([usage.code, JSON.parse(usage.stdout).error.type]).toEqual([2, 'UsageError']);
  });
});
