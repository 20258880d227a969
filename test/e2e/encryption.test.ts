import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { parseKey } from '../../src/config/environment';
import { followRun, jsonOutput } from '../../src/client/follow';
import { callTools, reply } from '../../src/fake-model/steps';
import { startCodecServer } from '../../src/storage/codec-server';
import { EncryptionCodec } from '../../src/storage/encryption-codec';
import { occurrencesInDatabase } from '../support/database';
import { startWorld, temporalCli, type TestWorld } from '../support/temporal';

let world: TestWorld | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await world?.close();
  world = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('encrypted payloads', () => {
  it('a secret in a user message is in neither the database nor `temporal workflow show`; the codec server reveals it', async () => {
    const encryption = { active: parseKey(randomBytes(32).toString('base64'), 'test-key'), previous: [] };
    const canary = `canary-${randomUUID()}`;
    world = await startWorld({
      config: { encryption },
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'repeat', arguments: JSON.stringify({ text: canary, times: 2 }) }]),
          reply(`Done: ${canary}`),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: `Repeat ${canary} twice.` });
    const result = await run.result();
    // The client holds the key: it reads everything as before.
    expect(result.answer).toBe(`Done: ${canary}`);
    expect(JSON.stringify(result.transcript)).toContain(canary.repeat(2));
    // What the model received is plaintext (the worker decrypts); what Temporal stores is not.
    expect(JSON.stringify(world.fake.requests[1]!.body.messages)).toContain(canary);
    expect(occurrencesInDatabase(canary)).toBe(0);
    // Text output prints plain JSON payloads as text (so the check would see an unencrypted canary).
    const shown = await temporalCli('workflow', 'show', '-w', run.workflowId);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain(canary);

    // With the codec endpoint, those who hold the key see plaintext.
    const codec = await startCodecServer(new EncryptionCodec(encryption), {
      port: 0,
      corsOrigin: 'http://localhost:8233',
    });
    cleanups.push(() => codec.close());
    const decoded = await temporalCli('workflow', 'show', '-w', run.workflowId, '--codec-endpoint', codec.url);
    expect(decoded.status, decoded.stderr).toBe(0);
    expect(decoded.stdout).toContain(canary);
    // The web UI calls it cross-origin.
    const preflight = await fetch(`${codec.url}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://localhost:8233' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
  });

  it('followers still get live tokens: heartbeat details are decoded with the client codecs', async () => {
    const encryption = { active: parseKey(randomBytes(32).toString('base64'), 'test-key'), previous: [] };
    world = await startWorld({
      config: { encryption },
      fake: { script: [reply(['one ', 'two ', 'three'], { chunkDelayMs: 150 })] },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'count' });
    const lines: string[] = [];
    const result = await followRun(
      run,
      jsonOutput((line) => lines.push(line)),
    );
    expect(result.answer).toBe('one two three');
    const chunks = lines
      .map((line) => JSON.parse(line) as { event_type: string; chunk?: string })
      .filter((event) => event.event_type === 'llm_chunk_arrive');
    expect(chunks.map((event) => event.chunk).join('')).toBe('one two three');
  });
});
