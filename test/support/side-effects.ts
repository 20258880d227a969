import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One side effect a tool performed (an email sent, a card charged), as the outside world saw it. */
export interface SideEffect {
  label: string;
  key: string;
  /** The worker process that performed it (PATCHLOOP_TEST_WORKER_NAME). */
  worker: string;
  at: number;
}

/**
 * A service outside the worker that tools call to perform side effects, so a test counts what really
 * happened across worker crashes: `POST /effect {label, key}` records one; `POST /attempt {key}` counts
 * attempts of one call and answers how many so far.
 */
export async function startSideEffectServer(): Promise<{
  url: string;
  effects: SideEffect[];
  attempts: Map<string, number>;
  close(): Promise<void>;
}> {
  const effects: SideEffect[] = [];
  const attempts = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (part: Buffer) => (body += part.toString()));
    request.on('end', () => {
      const parsed = JSON.parse(body || '{}') as { label?: string; key?: string; worker?: string };
      if (request.url === '/effect') {
        effects.push({
          label: String(parsed.label),
          key: String(parsed.key),
          worker: String(parsed.worker),
          at: Date.now(),
        });
        response.end('{}');
        return;
      }
      if (request.url === '/attempt') {
        const count = (attempts.get(String(parsed.key)) ?? 0) + 1;
        attempts.set(String(parsed.key), count);
        response.end(JSON.stringify({ attempt: count }));
        return;
      }
      response.statusCode = 404;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    effects,
    attempts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
