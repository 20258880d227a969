import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileInvocationTurn, ContextError, Mutations, PromptContract, SelfRefSnapshot } from '../../src/context';

const folder = join(__dirname, '..', 'fixtures', 'conformance');
const vectors = readdirSync(folder)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => JSON.parse(readFileSync(join(folder, name), 'utf8')));

describe('conformance vectors', () => {
  it('ships every shared vector', () => {
    expect(vectors.length).toBe(39);
  });

  for (const vector of vectors) {
    it(vector.id, () => {
      const before = JSON.stringify([vector.transcript, vector.mutations, vector.selfref_snapshot]);
      const run = () =>
        compileInvocationTurn(
          PromptContract.parse(vector.prompt_contract),
          vector.transcript,
          Mutations.parse(vector.mutations),
          vector.selfref_snapshot === null ? null : SelfRefSnapshot.parse(vector.selfref_snapshot),
        );
      if ('error' in vector.expected) {
        let thrown: unknown;
        try {
          run();
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ContextError);
        expect((thrown as Error).message).toBe(vector.expected.error.message);
      } else {
        expect(run()).toStrictEqual(vector.expected);
      }
      expect(JSON.stringify([vector.transcript, vector.mutations, vector.selfref_snapshot])).toBe(before);
    });
  }
});
