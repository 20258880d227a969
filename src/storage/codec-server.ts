import type { Payload, PayloadCodec } from '@temporalio/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CliErrorType } from '../common/cli-error-types';

/** JSON form of a payload in Temporal's remote codec protocol: base64 metadata values and data. */
interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;

function fromJson(payload: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(payload.data ?? '', 'base64'),
  };
}

function toJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  };
}

/**
 * Who may call the codec server: the holder of one bearer token (`Authorization: Bearer <token>`, what
 * `temporal --codec-auth 'Bearer <token>'` sends), or, on a loopback address only, anyone on the machine.
 */
export type CodecServerAccess = { token: string } | { unauthenticated: true };

/** Shorter tokens are refused: `openssl rand -hex 32` gives 64 characters. */
const MIN_CODEC_TOKEN_LENGTH = 32;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** The codec server would let in whoever reaches it; the CLI reports it as `InsecureCodecServer`. */
export class InsecureCodecServerError extends Error {
  override readonly name = CliErrorType.InsecureCodecServer;
}

/**
 * The one rule for starting a codec server: a token of at least MIN_CODEC_TOKEN_LENGTH characters, or
 * an explicit `unauthenticated` that only a loopback host may have.
 */
function checkCodecServerAccess(access: CodecServerAccess, host: string): void {
  if ('token' in access) {
    // What a header can carry: a token with a space or a newline in it (a file's second line) could never match.
    if (!/^[\x21-\x7e]*$/.test(access.token))
      throw new InsecureCodecServerError(
        'the codec token must be printable ASCII without spaces (openssl rand -hex 32)',
      );
    if (access.token.length < MIN_CODEC_TOKEN_LENGTH)
      throw new InsecureCodecServerError(
        `the codec token has ${access.token.length} characters; use at least ${MIN_CODEC_TOKEN_LENGTH} (openssl rand -hex 32)`,
      );
    return;
  }
  if (!LOOPBACK_HOSTS.has(host))
    throw new InsecureCodecServerError(
      `a codec server without a token listens on 127.0.0.1 or localhost only, not ${host}: whoever reaches it decrypts every payload; set PATCHLOOP_CODEC_TOKEN (openssl rand -hex 32)`,
    );
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Whether the request may use the codec: its bearer token (compared in constant time), or a loopback Host. */
function admitted(access: CodecServerAccess, request: IncomingMessage): boolean {
  if ('token' in access) {
    const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '')?.[1];
    // Digests of equal length: the comparison takes as long for any token, right or wrong.
    return presented !== undefined && timingSafeEqual(digest(presented), digest(access.token));
  }
  // Without a token, only pages and tools that address the server as loopback: a DNS-rebound name
  // (a web page's own host resolving to 127.0.0.1) is not let in.
  const host = (request.headers.host ?? '').replace(/:\d+$/, '');
  return LOOPBACK_HOSTS.has(host);
}

/**
 * Temporal's remote codec protocol (`POST /encode`, `POST /decode`, `{"payloads": [...]}`), so the web
 * UI and `temporal workflow show --codec-endpoint` show plaintext to whoever holds the token. Every
 * request but a CORS preflight (which browsers send without credentials) must carry it; one that does
 * not gets 401 before its body is read. CORS admits the UI's origin with the Authorization header.
 */
export async function startCodecServer(
  codec: PayloadCodec,
  options: { port: number; host?: string; corsOrigin: string; access: CodecServerAccess },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const host = options.host ?? '127.0.0.1';
  checkCodecServerAccess(options.access, host);
  const server = createServer(
    (request, response) => void handle(codec, options.corsOrigin, options.access, request, response),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`,
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function handle(
  codec: PayloadCodec,
  origin: string,
  access: CodecServerAccess,
  request: IncomingMessage,
  response: ServerResponse,
) {
  response.setHeader('Access-Control-Allow-Origin', origin);
  response.setHeader('Vary', 'Origin');
  response.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
  response.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
  response.setHeader('Access-Control-Allow-Credentials', 'true');
  const reply = (status: number, body: unknown) => {
    response.writeHead(status, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  try {
    if (request.method === 'OPTIONS') return void response.writeHead(204, { 'Access-Control-Max-Age': '600' }).end();
    if (!admitted(access, request)) {
      request.resume();
      if ('token' in access) response.setHeader('WWW-Authenticate', 'Bearer realm="patchloop-codec"');
      return 'token' in access
        ? reply(401, { message: 'missing or wrong token: send Authorization: Bearer <PATCHLOOP_CODEC_TOKEN>' })
        : reply(403, { message: 'address this codec server as 127.0.0.1 or localhost' });
    }
    const path = (request.url ?? '').split('?')[0]!.replace(/\/+$/, '');
    const action = path.endsWith('/encode') ? 'encode' : path.endsWith('/decode') ? 'decode' : undefined;
    if (!action) return reply(404, { message: 'POST /encode or /decode' });
    if (request.method !== 'POST') return reply(405, { message: 'POST only' });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) return reply(413, { message: `body over ${MAX_BODY_BYTES} bytes` });
      chunks.push(chunk as Buffer);
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
    if (!Array.isArray(body.payloads)) return reply(400, { message: 'expected {"payloads": [...]}' });
    const payloads = body.payloads.map(fromJson);
    const result = action === 'encode' ? await codec.encode(payloads) : await codec.decode(payloads);
    reply(200, { payloads: result.map(toJson) });
  } catch (error) {
    reply(400, { message: (error as Error).message });
  }
}
