import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
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

  it('sessions carry the whole core: the state the current build recorded has every field of it', () => {
    // As continue-as-new wrote it (raw JSON, before any default): what carryRun really carries.
    const session = (load(`chat-session-v${SESSION_SCHEMA_VERSION}.json`) as { state: Record<string, unknown> }).state;
    // What only some states hold: a batch at a boundary, sub-agents' pending decisions.
    const core = Object.keys(CarriedRun.shape).filter((key) => key !== 'awaiting_batch' && key !== 'child_approvals');
    expect(core.filter((key) => !(key in session))).toEqual([]);
    expect(session['recent_events']).not.toEqual([]);
  });

  it('restored states never share a default between runs (zod copies defaults shallowly)', () => {
    const first = parseSessionInput(load('chat-session-v1.json')).state!;
    const second = parseSessionInput(load('chat-session-v1.json')).state!;
    first.selfref_queue.intents.push({ kind: 'remember', text: 'only for the first session' });
    expect(second.selfref_queue.intents).toEqual([]);
  });

  it('refuses a state of a schema version this build does not know, clearly', () => {
    const future = { ...(load('agent-run-v1.json') as Record<string, unknown>) };
    future['state'] = { ...(future['state'] as Record<string, unknown>), schema_version: RUN_STATE_SCHEMA_VERSION + 1 };
    // A newer version comes from a newer build in a rolling deploy: a plain error fails the workflow
    // task (retried until a worker of that build takes it), not the run.
    let thrown: unknown;
    try {
      parseRunInput(future);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).not.toBeInstanceOf(ApplicationFailure);
    expect((thrown as Error).message).toMatch(
      /schema_version 6 is not supported by this worker \(supports 1, 2, 3, 4, 5\)/,
    );
    const unknown = { ...future, state: { ...(future['state'] as Record<string, unknown>), schema_version: 0 } };
    expect(() => parseRunInput(unknown)).toThrow(ApplicationFailure);
    const futureSession = { ...(load('chat-session-v1.json') as Record<string, unknown>) };
    futureSession['state'] = {
      ...(futureSession['state'] as Record<string, unknown>),
      schema_version: SESSION_SCHEMA_VERSION + 1,
    };
    expect(() => parseSessionInput(futureSession)).toThrow(
      /chatSession state schema_version 6 is not supported by this worker \(supports 1, 2, 3, 4, 5\)/,
    );
  });
});
