import type { Payload, PayloadCodec } from '@temporalio/common';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

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
 * Temporal's remote codec protocol (`POST /encode`, `POST /decode`, `{"payloads": [...]}`), so the web
 * UI and `temporal workflow show --codec-endpoint` show plaintext to whoever can reach this server and
 * it holds the key. CORS admits the UI's origin. Keep it where only operators reach it.
 */
export async function startCodecServer(
  codec: PayloadCodec,
  options: { port: number; host?: string; corsOrigin: string },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((request, response) => void handle(codec, options.corsOrigin, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function handle(codec: PayloadCodec, origin: string, request: IncomingMessage, response: ServerResponse) {
  response.setHeader('Access-Control-Allow-Origin', origin);
  response.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
  response.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
  response.setHeader('Access-Control-Allow-Credentials', 'true');
  const reply = (status: number, body: unknown) => {
    response.writeHead(status, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  try {
    if (request.method === 'OPTIONS') return void response.writeHead(204).end();
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
