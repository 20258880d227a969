import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentRunInput, ChatSessionInput, RUN_STATE_SCHEMA_VERSION, SESSION_SCHEMA_VERSION } from '../../src/runtime';

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

  it.each(fixtures.filter((name) => name.startsWith('agent-run-')))('%s parses as agentRun input', (name) => {
    const input = AgentRunInput.parse(load(name));
    expect(input.state?.transcript.length).toBeGreaterThan(0);
  });

  it.each(fixtures.filter((name) => name.startsWith('chat-session-')))('%s parses as chatSession input', (name) => {
    const input = ChatSessionInput.parse(load(name));
    expect(input.state?.transcript.length).toBeGreaterThan(0);
  });
});
