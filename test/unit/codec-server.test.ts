import { randomBytes } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parseKey } from '../../src/config/environment';
import { InsecureCodecServerError, startCodecServer, type CodecServerAccess } from '../../src/storage/codec-server';
import { EncryptionCodec } from '../../src/storage/encryption-codec';

const TOKEN = randomBytes(32).toString('hex');
const ORIGIN = 'http://localhost:8080';
const codec = new EncryptionCodec({ active: parseKey(randomBytes(32).toString('base64'), 'k1'), previous: [] });
const canary = `canary-${randomBytes(8).toString('hex')}`;

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of servers.splice(0)) await close();
});

async function serve(access: CodecServerAccess, host = '127.0.0.1') {
  const server = await startCodecServer(codec, { port: 0, host, corsOrigin: ORIGIN, access });
  servers.push(() => server.close());
  return server.url;
}

/** One HTTP request as a client sends it (node:http, so that the Host header is the test's to set). */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: options.method ?? 'POST', headers: options.headers }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

/** A `/decode` body as the UI and the CLI send it: the canary's payload, encrypted. */
async function encryptedBody(): Promise<string> {
  const [encrypted] = await codec.encode([
    { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(canary)) },
  ]);
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  return JSON.stringify({
    payloads: [
      {
        metadata: Object.fromEntries(Object.entries(encrypted!.metadata!).map(([key, value]) => [key, base64(value)])),
        data: base64(encrypted!.data!),
      },
    ],
  });
}

/** The texts a response could reveal the canary as: plain, or inside a base64 payload. */
function revealsCanary(body: string): boolean {
  const decodedPayloads = [...body.matchAll(/"data":"([^"]*)"/g)].map((match) => Buffer.from(match[1]!, 'base64'));
  return body.includes(canary) || decodedPayloads.some((data) => data.toString().includes(canary));
}

describe('codec server access', () => {
  it('decodes only for the bearer of the token: none or a wrong one gets 401 and no plaintext', async () => {
    const url = await serve({ token: TOKEN });
    const body = await encryptedBody();
    const json = { 'Content-Type': 'application/json' };

    const anonymous = await send(`${url}/decode`, { headers: json, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(revealsCanary(anonymous.body)).toBe(false);

    for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}x`, TOKEN, `Basic ${TOKEN}`]) {
      const wrong = await send(`${url}/decode`, { headers: { ...json, Authorization: authorization }, body });
      expect([authorization, wrong.status, revealsCanary(wrong.body)]).toEqual([authorization, 401, false]);
    }
    // Encoding needs the token too: it would let anyone write ciphertext under the key.
    const encode = await send(`${url}/encode`, { headers: json, body: '{"payloads":[]}' });
    expect(encode.status).toBe(401);
    // Unknown paths answer nothing more to a stranger.
    expect((await send(`${url}/elsewhere`, { method: 'GET' })).status).toBe(401);

    // The scheme is case-insensitive (RFC 9110), as clients may spell it.
    for (const scheme of ['Bearer', 'bearer']) {
      const right = await send(`${url}/decode`, { headers: { ...json, Authorization: `${scheme} ${TOKEN}` }, body });
      expect(right.status).toBe(200);
      expect(revealsCanary(right.body)).toBe(true);
    }
  });

  it('answers the web UI’s CORS preflight without a token and allows the Authorization header', async () => {
    const url = await serve({ token: TOKEN });
    const preflight = await send(`${url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: ORIGIN,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    expect(preflight.headers['access-control-allow-headers']?.toLowerCase().split(/,\s*/)).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'x-namespace']),
    );
    expect(preflight.headers['access-control-allow-credentials']).toBe('true');
  });

  it('refuses to start without a token of 32 characters, or without one on any host but loopback', async () => {
    await expect(serve({ token: 'short-token' })).rejects.toThrow(/at least 32/);
    await expect(serve({ token: `${TOKEN.slice(0, 20)} ${TOKEN.slice(20)}` })).rejects.toThrow(/without spaces/);
    for (const host of ['0.0.0.0', '::']) {
      const refused = serve({ unauthenticated: true }, host);
      await expect(refused).rejects.toBeInstanceOf(InsecureCodecServerError);
      await expect(refused).rejects.toThrow(/PATCHLOOP_CODEC_TOKEN/);
    }
  });

  it('without a token, on loopback, serves only requests addressed to loopback (no DNS rebinding)', async () => {
    const url = await serve({ unauthenticated: true });
    const body = await encryptedBody();
    const port = new URL(url).port;
    const json = { 'Content-Type': 'application/json' };
    const local = await send(`${url}/decode`, { headers: { ...json, Host: `localhost:${port}` }, body });
    expect([local.status, revealsCanary(local.body)]).toEqual([200, true]);
    const rebound = await send(`${url}/decode`, { headers: { ...json, Host: `attacker.example:${port}` }, body });
    expect([rebound.status, revealsCanary(rebound.body)]).toEqual([403, false]);
  });
});
