import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { parseKey } from '../../src/config/environment';
import { followRun, jsonOutput } from '../../src/client/follow';
import { callTools, reply } from '../../src/fake-model/steps';
import { startCodecServer } from '../../src/storage/codec-server';
import { EncryptionCodec } from '../../src/storage/encryption-codec';
import { occurrencesInDatabase } from '../support/database';
import { runCli, startCliProcess } from '../support/cli';
import { temporalCli } from '../support/temporal';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('encrypted payloads', () => {
  it('a secret in a user message is in neither the database nor `temporal workflow show`; the codec server reveals it', async ({
    startWorld,
  }) => {
    const encryption = { active: parseKey(randomBytes(32).toString('base64'), 'test-key'), previous: [] };
    const canary = `canary-${randomUUID()}`;
    const world = await startWorld({
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

    // With the codec endpoint, those who hold the key and the token see plaintext; no one else does.
    const token = randomBytes(32).toString('hex');
    const codec = await startCodecServer(new EncryptionCodec(encryption), {
      port: 0,
      corsOrigin: 'http://localhost:8233',
      access: { token },
    });
    cleanups.push(() => codec.close());
    const statuses: number[] = [];
    codec.server.on('request', (_request, response: ServerResponse) =>
      response.on('finish', () => statuses.push(response.statusCode)),
    );
    const show = (...extra: string[]) =>
      temporalCli('workflow', 'show', '-w', run.workflowId, '--codec-endpoint', codec.url, ...extra);
    const decoded = await show('--codec-auth', `Bearer ${token}`);
    expect(decoded.status, decoded.stderr).toBe(0);
    expect(decoded.stdout).toContain(canary);
    expect(statuses.length).toBeGreaterThan(0);
    expect(new Set(statuses)).toEqual(new Set([200]));
    // Without the token the CLI gets 401 (it retries until its deadline: a short one keeps the test short).
    statuses.length = 0;
    const refused = await show('--command-timeout', '2s');
    expect(refused.status).not.toBe(0);
    expect(refused.stdout + refused.stderr).not.toContain(canary);
    expect(statuses.length).toBeGreaterThan(0);
    expect(new Set(statuses)).toEqual(new Set([401]));
  });

  it('followers still get live tokens: heartbeat details are decoded with the client codecs', async ({
    startWorld,
  }) => {
    const encryption = { active: parseKey(randomBytes(32).toString('base64'), 'test-key'), previous: [] };
    const world = await startWorld({
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

describe('patchloop codec-server', () => {
  const key = { PATCHLOOP_ENCRYPTION_KEY: randomBytes(32).toString('base64'), PATCHLOOP_CODEC_TOKEN: '' };

  it('refuses to start without a token, and without one off loopback; says how to make one', async () => {
    const help = await runCli(['codec-server', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('[--token-file FILE | --allow-unauthenticated]');
    const missing = await runCli(['codec-server', '--port', '0', '--json'], key);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr).error).toMatchObject({
      type: 'InsecureCodecServer',
      message: expect.stringContaining('PATCHLOOP_CODEC_TOKEN (openssl rand -hex 32)'),
    });
    const exposed = await runCli(['codec-server', '--allow-unauthenticated', '--host', '0.0.0.0', '--json'], key);
    expect(exposed.code).toBe(1);
    expect(JSON.parse(exposed.stderr).error.type).toBe('InsecureCodecServer');
    const both = await runCli(['codec-server', '--allow-unauthenticated'], {
      ...key,
      PATCHLOOP_CODEC_TOKEN: randomBytes(32).toString('hex'),
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('PATCHLOOP_CODEC_TOKEN and --allow-unauthenticated both say who may call');
  });

  it('takes its token from --token-file and lets in only requests that carry it', async () => {
    const token = randomBytes(32).toString('hex');
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'codec-token-')), 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const server = await startCliProcess(['codec-server', '--port', '0', '--token-file', tokenFile], key, {
      text: 'Ctrl-C stops it',
      what: 'the codec server to listen',
      timeoutMs: 30_000,
    });
    cleanups.push(() => server.stop());
    const url = /codec server on (\S+)/.exec(server.output())![1]!;
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/encode`, { method: 'POST', headers, body: JSON.stringify({ payloads: [] }) });
    expect((await post({})).status).toBe(401);
    expect((await post({ Authorization: `Bearer ${token}` })).status).toBe(200);
  });
});
