/**
 * The chat page's server: it serves the page (bundled from page.ts by esbuild when it starts) and passes
 * the page's AG-UI requests to the patchloop gateway with the key, so the key never reaches the
 * browser. PATCHLOOP_GATEWAY (default http://127.0.0.1:8400), PATCHLOOP_KEY, PORT (default 8500).
 */
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const gateway = new URL(process.env['PATCHLOOP_GATEWAY'] ?? 'http://127.0.0.1:8400');
const key = process.env['PATCHLOOP_KEY'];
if (!key) {
  console.error('PATCHLOOP_KEY is not set: create one with npx patchloop keys create NAME');
  process.exit(1);
}
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const page = readFileSync(here('index.html'), 'utf8');
const bundle = await build({
  entryPoints: [here('page.ts')],
  bundle: true,
  format: 'esm',
  write: false,
  logLevel: 'error',
});
const script = bundle.outputFiles[0]!.text;

const server = createServer((incoming, outgoing) => {
  const path = incoming.url ?? '/';
  if (incoming.method === 'GET' && (path === '/' || path.startsWith('/?'))) {
    outgoing.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
  } else if (incoming.method === 'GET' && path === '/page.js') {
    outgoing.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' }).end(script);
  } else if (incoming.method === 'POST' && path.startsWith('/ag-ui/')) {
    // The page's request as it came (its Last-Event-ID too), with the key; the answer streams back.
    const upstream = request(
      new URL(path, gateway),
      {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: incoming.headers.accept ?? 'text/event-stream',
          Authorization: `Bearer ${key}`,
          ...(incoming.headers['last-event-id'] ? { 'Last-Event-ID': incoming.headers['last-event-id'] } : {}),
        },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', (error) => outgoing.writeHead(502).end(`the gateway did not answer: ${error.message}`));
    // A page that goes away closes its stream only: the run goes on, and the page can come back to it.
    outgoing.on('close', () => upstream.destroy());
    incoming.pipe(upstream);
  } else {
    outgoing.writeHead(404).end();
  }
});
const port = Number(process.env['PORT'] ?? 8500);
server.listen(port, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  console.log(`AG-UI chat at http://127.0.0.1:${address.port} (gateway ${gateway.origin})`);
});
