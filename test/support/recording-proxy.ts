import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that passed through the proxy: its body as the server received it, and how it ended. */
export interface PassedRequest {
  path: string;
  body: Record<string, unknown>;
  status?: number;
  /** The response body as the client received it (text; a stream's SSE lines). */
  response: string;
  /** The client went away before the response ended (an abort closed the connection). */
  abandoned: boolean;
}

/**
 * A pass-through HTTP proxy in front of a real server: every byte goes both ways unchanged, and the
 * request bodies the server received are kept for the test to read. When the client goes away, the
 * upstream request is closed too, as it would be without the proxy.
 */
export class RecordingProxy {
  readonly requests: PassedRequest[];
  private constructor(
    private readonly server: Server,
    readonly url: string,
    requests: PassedRequest[],
  ) {
    this.requests = requests;
  }

  static async start(target: string): Promise<RecordingProxy> {
    const upstream = new URL(target);
    const requests: PassedRequest[] = [];
    const server = createServer((incoming, outgoing) => {
      void readBody(incoming).then((raw) => {
        const passed: PassedRequest = { path: incoming.url ?? '', body: parse(raw), response: '', abandoned: false };
        requests.push(passed);
        const forwarded = httpRequest(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: incoming.method,
            path: incoming.url,
            headers: { ...incoming.headers, host: upstream.host },
          },
          (answer) => {
            passed.status = answer.statusCode;
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.on('data', (chunk: Buffer) => {
              passed.response += chunk.toString('utf8');
              outgoing.write(chunk);
            });
            answer.on('end', () => outgoing.end());
          },
        );
        forwarded.on('error', () => outgoing.destroy());
        outgoing.on('close', () => {
          if (!outgoing.writableFinished) {
            passed.abandoned = true;
            forwarded.destroy();
          }
        });
        forwarded.end(raw);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new RecordingProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests);
  }

  /** The chat requests the server received, in order. */
  get chatRequests(): PassedRequest[] {
    return this.requests.filter((passed) => passed.path.endsWith('/chat/completions'));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => resolve(Buffer.concat(chunks)));
    incoming.on('error', reject);
  });
}

function parse(raw: Buffer): Record<string, unknown> {
  try {
    return JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}
