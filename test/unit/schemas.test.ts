import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentRunInput } from '../../src/runtime';
import { publishedSchemas } from '../../src/runtime/json-schemas';

describe('published JSON Schemas', () => {
  for (const [name, schema] of Object.entries(publishedSchemas())) {
    it(`schemas/${name} matches the zod schema (regenerate with npm run schemas)`, () => {
      expect(JSON.parse(readFileSync(join(__dirname, '..', '..', 'schemas', name), 'utf8'))).toEqual(schema);
    });
  }

  it('the run input schema rejects what the workflow rejects', () => {
    expect(AgentRunInput.safeParse({ agent: 'assistant', input: 'hi' }).success).toBe(true);
    expect(AgentRunInput.safeParse({ agent: 'assistant' }).success).toBe(false);
    expect(AgentRunInput.safeParse({ agent: '', input: 'x' }).success).toBe(false);
    expect(AgentRunInput.safeParse({ agent: 'a', input: 'x', extra: 1 }).success).toBe(false);
  });
});
