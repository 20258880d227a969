import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { withAccumulatedContent } from './accumulated-content';
import type { ChunkTransport, StreamEvent, StreamOffset } from './chunk';
import type { StreamTokens } from './stream-token';

export interface StreamServer {
  /** The URL followers use; announced in the LLM phase's heartbeat details. */
  url: string;
  close(): Promise<void>;
}

export interface StreamServerOptions {
  port: number;
  host: string;
  advertiseUrl?: string;
  tokens: StreamTokens;
  /** Concurrent followers served at once; more get 503. */
  maxFollowers?: number;
}

/** Temporal workflow ids are at most 1,000 bytes. */
const MAX_RUN_ID_BYTES = 1000;
const KEEP_ALIVE_MS = 15_000;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * Serves a run's token chunks over SSE: `GET /v1/runs/<workflowId>/chunks?llm_call=N&chunk_index=K`
 * with `Authorization: Bearer <token>` (the run's capability, see `StreamTokens`) replays from that
 * offset and then streams live. Every event has an `id` (`eventId`), so `Last-Event-ID` resumes exactly
 * after it. Malformed requests get 4xx; no request can throw out of the handler.
 */
export async function startStreamServer(
  transport: ChunkTransport,
  options: StreamServerOptions,
): Promise<StreamServer> {
  const followers = new Set<AbortController>();
  const server: Server = createServer((request, response) => {
    serve(request, response, transport, options, followers).catch((error: unknown) => {
      // A failure after the headers went out: end the stream; the follower resumes from its last id.
      if (response.headersSent) response.destroy();
      else
        sendError(
          response,
          error instanceof HttpError ? error : new HttpError(500, 'InternalError', 'the stream endpoint failed'),
        );
    });
  });
  // Malformed HTTP (bad request lines, oversized headers) never reaches `serve`: answer and close.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) return socket.destroy();
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });

  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: options.advertiseUrl ?? `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}`,
    close: async () => {
      for (const follower of followers) follower.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One follower: authorised, within the cap, then the run's events from its offset until it leaves. */
async function serve(
  request: IncomingMessage,
  response: ServerResponse,
  transport: ChunkTransport,
  options: StreamServerOptions,
  followers: Set<AbortController>,
): Promise<void> {
  const { runId, offset, token } = parseRequest(request);
  if (!options.tokens.verify(runId, token)) {
    const message = "a valid stream token is required (the run's stream_token, as 'Authorization: Bearer <token>')";
    throw new HttpError(401, 'Unauthorized', message, { 'www-authenticate': 'Bearer' });
  }
  const maxFollowers = options.maxFollowers ?? 1000;
  if (followers.size >= maxFollowers) {
    const message = `this worker serves at most ${maxFollowers} followers at once`;
    throw new HttpError(503, 'TooManyFollowers', message, { 'retry-after': '1' });
  }
  const abort = new AbortController();
  followers.add(abort);
  response.on('close', () => abort.abort());
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
  const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  try {
    for await (const event of withAccumulatedContent(transport, runId, offset, abort.signal)) {
      // Backpressure: a slow follower is not buffered without bound; wait until its socket drains.
      if (!response.write(`id: ${eventId(event)}\ndata: ${JSON.stringify(event)}\n\n`))
        await drained(response, abort.signal);
    }
  } finally {
    clearInterval(keepAlive);
    followers.delete(abort);
    response.end();
  }
}

function parseRequest(request: IncomingMessage): { runId: string; offset: StreamOffset; token: string | undefined } {
  let url: URL;
  try {
    url = new URL(request.url ?? '/', 'http://stream.invalid');
  } catch {
    throw new HttpError(400, 'BadRequest', 'malformed request URL');
  }
  const match = /^\/v1\/runs\/([^/]+)\/chunks$/.exec(url.pathname);
  if (!match) throw new HttpError(404, 'NotFound', 'GET /v1/runs/<workflowId>/chunks');
  if (request.method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', 'only GET is served', { allow: 'GET' });
  let runId: string;
  try {
    runId = decodeURIComponent(match[1]!);
  } catch {
    throw new HttpError(400, 'BadRequest', 'the run id is not valid percent-encoded UTF-8');
  }
  if (Buffer.byteLength(runId, 'utf8') > MAX_RUN_ID_BYTES)
    throw new HttpError(400, 'BadRequest', `the run id is longer than ${MAX_RUN_ID_BYTES} bytes`);
  const header = request.headers['authorization'];
  const bearer = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
  // EventSource cannot set headers: browsers may pass the token as a query parameter instead.
  const token = bearer ?? url.searchParams.get('token') ?? undefined;
  const lastEventId = request.headers['last-event-id'];
  const offset =
    typeof lastEventId === 'string' && lastEventId !== '' ? offsetAfter(lastEventId) : queryOffset(url.searchParams);
  return { runId, offset, token };
}

function queryOffset(params: URLSearchParams): StreamOffset {
  const number = (name: string, fallback: number, minimum: number) => {
    const text = params.get(name);
    if (text === null) return fallback;
    if (!/^\d{1,9}$/.test(text) || Number(text) < minimum)
      throw new HttpError(400, 'BadRequest', `${name} must be an integer >= ${minimum}`);
    return Number(text);
  };
  const attempt = params.get('attempt') === null ? undefined : number('attempt', 1, 1);
  return {
    llm_call: number('llm_call', 1, 1),
    chunk_index: number('chunk_index', 0, 0),
    ...(attempt !== undefined ? { attempt } : {}),
  };
}

/**
 * The SSE `id` of an event: `<llm_call>:<attempt>:<chunk_index>` for chunks and argument deltas,
 * `<llm_call>:<attempt>:end` when the call ended (completed or aborted), `<llm_call>:<attempt>:failed`
 * when that attempt broke and a later one streams the call again.
 */
function eventId(event: StreamEvent): string {
  if (event.event_type === 'llm_stream_end')
    return `${event.llm_call}:${event.attempt}:${event.outcome === 'failed' ? 'failed' : 'end'}`;
  return `${event.llm_call}:${event.attempt}:${event.chunk_index}`;
}

/** Where to resume after the event with this id (the two-part ids of earlier versions too). */
function offsetAfter(id: string): StreamOffset {
  const parts = id.split(':');
  const n = (text: string | undefined) => {
    if (text === undefined || !/^\d{1,9}$/.test(text))
      throw new HttpError(400, 'BadRequest', `Last-Event-ID '${id.slice(0, 64)}' is not an id this endpoint sent`);
    return Number(text);
  };
  if (parts.length === 3) {
    const [call, attempt, last] = [n(parts[0]), n(parts[1]), parts[2]];
    if (last === 'end') return { llm_call: call + 1, chunk_index: 0 };
    if (last === 'failed') return { llm_call: call, attempt: attempt + 1, chunk_index: 0 };
    return { llm_call: call, attempt, chunk_index: n(last) + 1 };
  }
  if (parts.length === 2) {
    const call = n(parts[0]);
    return parts[1] === 'end'
      ? { llm_call: call + 1, chunk_index: 0 }
      : { llm_call: call, chunk_index: n(parts[1]) + 1 };
  }
  return n(undefined) as never;
}

function drained(response: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    response.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function sendError(response: ServerResponse, error: HttpError): void {
  response
    .writeHead(error.status, { 'content-type': 'application/json', ...error.headers })
    .end(JSON.stringify({ error: { type: error.type, message: error.message } }));
}
