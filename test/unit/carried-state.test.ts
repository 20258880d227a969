import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CarriedRun, RUN_STATE_SCHEMA_VERSION, SESSION_SCHEMA_VERSION } from '../../src/runtime';
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

  it('a version 1 session state loads with the fields version 2 added: an empty SelfRef queue, its events counted as dropped', () => {
    const state = parseSessionInput(load('chat-session-v1.json')).state!;
    expect(state.schema_version).toBe(1);
    expect(state.selfref_queue).toEqual({ intents: [], compaction: null });
    expect([state.recent_events, state.rejected_inputs, state.turn_tool_calls]).toEqual([[], 0, 0]);
    expect(state.events_dropped).toBe(state.event_seq);
    expect(state.event_seq).toBeGreaterThan(0);
  });

  it('runs and sessions carry one core: every field of the core is in both states', () => {
    const run = parseRunInput(load(`agent-run-v${RUN_STATE_SCHEMA_VERSION}.json`)).state!;
    const session = parseSessionInput(load(`chat-session-v${SESSION_SCHEMA_VERSION}.json`)).state!;
    const core = Object.keys(CarriedRun.shape).filter((key) => key !== 'awaiting_batch');
    expect(core.filter((key) => !(key in run))).toEqual([]);
    expect(core.filter((key) => !(key in session))).toEqual([]);
  });

  it('refuses a state of a schema version this build does not know, clearly', () => {
    const future = { ...(load('agent-run-v1.json') as Record<string, unknown>) };
    future['state'] = { ...(future['state'] as Record<string, unknown>), schema_version: RUN_STATE_SCHEMA_VERSION + 1 };
    expect(() => parseRunInput(future)).toThrow(/schema_version 3 is not supported by this worker \(supports 1, 2\)/);
    const futureSession = { ...(load('chat-session-v1.json') as Record<string, unknown>) };
    futureSession['state'] = {
      ...(futureSession['state'] as Record<string, unknown>),
      schema_version: SESSION_SCHEMA_VERSION + 1,
    };
    expect(() => parseSessionInput(futureSession)).toThrow(
      /chatSession state schema_version 3 is not supported by this worker \(supports 1, 2\)/,
    );
  });
});
