import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_STATE_SCHEMA_VERSION, SESSION_SCHEMA_VERSION } from '../../src/runtime';
import { parseRunInput } from '../../src/workflows/agent-run';
import { parseSessionInput } from '../../src/workflows/chat-session';

/**
 * State that continue-as-new carried, recorded by earlier builds (one fixture per schema version,
 * never re-recorded): a worker of this build must load every one of them, or a deploy would strand the
 * runs that continued under the old build.
 */
const folder = join(__dirname, '..', 'fixtures', 'carried-state');
const fixtures = readdirSync(folder).filter((name) => name.endsWith('.json'));
const load = (name: string) => JSON.parse(readFileSync(join(folder, name), 'utf8')) as unknown;

describe('carried continue-as-new state of every schema version still loads', () => {
  it('has a fixture for every schema version up to the current one', () => {
    for (let version = 1; version <= RUN_STATE_SCHEMA_VERSION; version += 1)
      expect(fixtures).toContain(`agent-run-v${version}.json`);
    for (let version = 1; version <= SESSION_SCHEMA_VERSION; version += 1)
      expect(fixtures).toContain(`chat-session-v${version}.json`);
  });

  // Through the workflows' own parsing, schema-version gate included.
  it.each(fixtures.filter((name) => name.startsWith('agent-run-')))('%s parses as agentRun input', (name) => {
    const input = parseRunInput(load(name));
    expect(input.state?.transcript.length).toBeGreaterThan(0);
  });

  it.each(fixtures.filter((name) => name.startsWith('chat-session-')))('%s parses as chatSession input', (name) => {
    const input = parseSessionInput(load(name));
    expect(input.state?.transcript.length).toBeGreaterThan(0);
  });

  it('refuses a state of a schema version this build does not know, clearly', () => {
    const future = { ...(load('agent-run-v1.json') as Record<string, unknown>) };
    future['state'] = { ...(future['state'] as Record<string, unknown>), schema_version: RUN_STATE_SCHEMA_VERSION + 1 };
    expect(() => parseRunInput(future)).toThrow(/schema_version 3 is not supported by this worker \(supports 1, 2\)/);
  });
});
