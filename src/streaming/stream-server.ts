import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChunkTransport, StreamOffset } from './chunk';

export interface StreamServer {
  /** The URL followers use; announced in the LLM phase's heartbeat details. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves a run's token chunks over SSE: `GET /v1/runs/<workflowId>/chunks?llm_call=N&chunk_index=K`
 * replays from that offset and then streams live. Each event's `id` is `<llm_call>:<chunk_index>`, so a
 * client (or EventSource's Last-Event-ID) resumes without gaps or repeats.
 */
export async function startStreamServer(transport: ChunkTransport, options: { port: number; host: string; advertiseUrl?: string }): Promise<StreamServer> {
  const connections = new Set<AbortController>();
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const match = /^\/v1\/runs\/([^/]+)\/chunks$/.exec(url.pathname);
    if (request.method !== 'GET' || !match) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'NotFound', message: 'GET /v1/runs/<workflowId>/chunks' } }));
      return;
    }
    const offset = parseOffset(url.searchParams.get('llm_call'), url.searchParams.get('chunk_index'), request.headers['last-event-id']);
    const abort = new AbortController();
    connections.add(abort);
    response.on('close', () => abort.abort());
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    response.flushHeaders();
    const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
    void (async () => {
      try {
        for await (const event of transport.subscribe(decodeURIComponent(match[1]!), offset, abort.signal)) {
          const id = event.event_type === 'llm_chunk_arrive' ? `${event.llm_call}:${event.chunk_index}` : `${event.llm_call}:end`;
          response.write(`id: ${id}\ndata: ${JSON.stringify(event)}\n\n`);
        }
      } finally {
        clearInterval(keepAlive);
        connections.delete(abort);
        response.end();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: options.advertiseUrl ?? `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}`,
    close: async () => {
      for (const connection of connections) connection.abort();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseOffset(call: string | null, index: string | null, lastEventId: string | string[] | undefined): StreamOffset {
  if (typeof lastEventId === 'string' && /^\d+:(\d+|end)$/.test(lastEventId)) {
    const [lastCall, lastIndex] = lastEventId.split(':');
    return lastIndex === 'end' ? { llm_call: Number(lastCall) + 1, chunk_index: 0 } : { llm_call: Number(lastCall), chunk_index: Number(lastIndex) + 1 };
  }
  return { llm_call: Math.max(1, Number(call ?? 1) || 1), chunk_index: Math.max(0, Number(index ?? 0) || 0) };
}
