import Ajv2020 from 'ajv/dist/2020';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, RunEvent, StreamEvent } from '../../src/runtime';
import { publishedSchemas } from '../../src/runtime/json-schemas';

const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const digest = (schema: unknown) => createHash('sha256').update(JSON.stringify(schema)).digest('hex');
const PROTOCOL_FILES = ['run-event.schema.json', 'stream-event.schema.json'];

const origin = {
  session_id: 'run-1',
  agent_call_id: 'run-1',
  event_seq: 1,
  parent_agent_call_id: null,
  fork_id: null,
  fork_depth: 0,
  fork_seq: null,
  selfref_instance_id: null,
  source_memory_key: null,
  memory_key: 'run-1',
  tool_name: null,
  tool_call_id: null,
};
const common = {
  seq: 1,
  run_id: 'run-1',
  iteration: 0,
  timestamp: '2026-01-01T00:00:00.000Z',
  protocol_version: PROTOCOL_VERSION,
  origin,
  func_name: 'assistant',
  trace_id: 'run-1',
  extra: {},
};

describe('the event protocol', () => {
  it('has a version whose schemas are recorded: a changed schema needs a new protocol_version', () => {
    const versions = JSON.parse(read('test/fixtures/event-protocol-versions.json')) as Record<
      string,
      Record<string, string>
    >;
    const schemas = publishedSchemas();
    const current = Object.fromEntries(PROTOCOL_FILES.map((file) => [file, digest(schemas[file])]));
    // Bump PROTOCOL_VERSION in src/runtime/events.ts, add its digests here, and say what changed in
    // docs/event-protocol.md.
    expect(versions[String(PROTOCOL_VERSION)]).toEqual(current);
    expect(Math.max(...Object.keys(versions).map(Number))).toBe(PROTOCOL_VERSION);
  });

  it('publishes JSON Schemas that a standard validator accepts, and that agree with the zod schemas', () => {
    const ajv = new Ajv2020({ strict: false });
    const runEvent = ajv.compile(JSON.parse(read('schemas/run-event.schema.json')));
    const streamEvent = ajv.compile(JSON.parse(read('schemas/stream-event.schema.json')));
    const good = { ...common, event_type: 'react_iteration_end', tool_calls_count: 2 };
    const samples = [
      good,
      { ...good, tool_calls_count: 'two' },
      { ...good, protocol_version: PROTOCOL_VERSION + 1 },
      { ...good, surprise: true },
      { ...common, event_type: 'no_such_event' },
      { ...good, origin: { ...origin, session_id: undefined } },
    ];
    for (const sample of samples) {
      const plain = JSON.parse(JSON.stringify(sample)) as unknown;
      expect(runEvent(plain)).toBe(RunEvent.safeParse(plain).success);
    }
    expect(runEvent(good)).toBe(true);
    const chunk = {
      event_type: 'llm_chunk_arrive',
      protocol_version: PROTOCOL_VERSION,
      run_id: 'run-1',
      iteration: 1,
      llm_call: 1,
      attempt: 1,
      chunk_index: 0,
      chunk: 'Hel',
      accumulated_content: 'Hel',
      timestamp: '2026-01-01T00:00:00.000Z',
    };
    expect(streamEvent(chunk)).toBe(true);
    expect(StreamEvent.safeParse(chunk).success).toBe(true);
    expect(streamEvent({ ...chunk, chunk_index: -1 })).toBe(false);
  });

  it('is documented: every event type, every field of the common envelope, and both schema files', () => {
    const page = read('docs/event-protocol.md');
    const types = [
      ...RunEvent.options.map((option) => option.shape.event_type.value),
      ...StreamEvent.options.map((option) => option.shape.event_type.value),
    ];
    expect(types.filter((type) => !page.includes(`\`${type}\``))).toEqual([]);
    for (const field of Object.keys(common)) expect(page).toContain(`\`${field}\``);
    for (const file of PROTOCOL_FILES) expect(page).toContain(`(../schemas/${file})`);
    expect(page).toContain(`protocol_version: ${PROTOCOL_VERSION}`);
  });
});
