import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { freePort } from '../../src/worker/free-port';
import { runCli, startCliWorker } from '../support/cli';

let proxy: http2.Http2SecureServer | undefined;
afterEach(async () => {
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  proxy = undefined;
});

/**
 * The dev server speaks plain gRPC, so TLS is put in front of it: an HTTP/2 endpoint with a certificate
 * from a private CA that forwards each call to the dev server and records its path and `authorization`
 * header. A client that does not trust the CA cannot connect; one configured with Temporal's TLS
 * variables can.
 */
async function tlsInFront(
  target: string,
): Promise<{ address: string; caFile: string; calls: Array<{ path: string; authorization: string | undefined }> }> {
  const calls: Array<{ path: string; authorization: string | undefined }> = [];
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-tls-'));
  // A private CA and a server certificate it signed (rustls refuses a self-signed end entity).
  const file = (name: string) => join(folder, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=patchloop-test-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    file('key.pem'),
    '-out',
    file('leaf.csr'),
  );
  writeFileSync(
    file('leaf.ext'),
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('leaf.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    file('leaf.ext'),
    '-out',
    file('cert.pem'),
  );
  const key = file('key.pem');
  const cert = file('cert.pem');
  // An HTTP/2 proxy, not a byte pipe: it sees each gRPC call's headers (the API key among them).
  const upstream = http2.connect(`http://${target}`);
  const server = http2.createSecureServer({ key: readFileSync(key), cert: readFileSync(cert) });
  server.on('stream', (stream, headers) => {
    const authorization = headers['authorization'];
    calls.push({
      path: String(headers[':path']),
      authorization: typeof authorization === 'string' ? authorization : undefined,
    });
    const forwarded = Object.fromEntries(
      Object.entries(headers).filter(([name]) => name !== ':authority' && name !== ':scheme'),
    );
    const call = upstream.request(forwarded);
    stream.pipe(call);
    let trailers: http2.IncomingHttpHeaders = {};
    call.on('trailers', (received) => (trailers = received));
    call.on('response', (response) => {
      // The caller may have gone (a worker that stops cancels its polls).
      if (stream.destroyed || stream.closed) return call.close(http2.constants.NGHTTP2_CANCEL);
      // A trailers-only answer (an error status) has nothing to add after the headers.
      const trailersOnly = 'grpc-status' in response;
      stream.respond(response, { waitForTrailers: !trailersOnly });
      if (!trailersOnly) stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      call.pipe(stream);
    });
    call.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('error', () => call.close(http2.constants.NGHTTP2_CANCEL));
    stream.on('close', () => call.closed || call.close(http2.constants.NGHTTP2_CANCEL));
  });
  server.on('close', () => upstream.close());
  proxy = server;
  const listenPort = await freePort();
  await new Promise<void>((resolve) => proxy!.listen(listenPort, '127.0.0.1', resolve));
  return { address: `localhost:${listenPort}`, caFile: file('ca.pem'), calls };
}

const cli = (args: string[], env: Record<string, string>) => runCli(args, env);

describe("connections from Temporal's environment configuration", () => {
  it('TLS with a private CA and an API key, read from TEMPORAL_* variables, for client and worker; an untrusted server is refused', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const { address, caFile, calls } = await tlsInFront(world.config.temporalAddress);
    const taskQueue = `tls-${Date.now()}`;
    const tls = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: caFile,
      TEMPORAL_API_KEY: 'test-api-key',
      PATCHLOOP_TASK_QUEUE: taskQueue,
    };
    // Without trusting the CA, the handshake fails and the CLI says where it could not connect.
    const untrusted = await cli(['list'], { TEMPORAL_ADDRESS: address, TEMPORAL_TLS: 'true' });
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toContain(`cannot reach Temporal at ${address}`);
    // A worker and a client over TLS.
    const worker = await startCliWorker(['--fake-model'], { ...tls, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
    try {
      const run = await cli(['run', 'assistant', 'add', '2', 'and', '3', '--follow'], tls);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('answer: Done: add returned 5.');
      const listed = await cli(['list', '--json'], tls);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).length).toBeGreaterThan(0);
    } finally {
      await worker.stop();
    }
    // Every call of the worker and the CLI carried the key as Temporal Cloud expects it.
    expect(calls.some((call) => call.path.endsWith('/PollWorkflowTaskQueue'))).toBe(true);
    expect(calls.some((call) => call.path.endsWith('/StartWorkflowExecution'))).toBe(true);
    expect(calls.filter((call) => call.authorization !== 'Bearer test-api-key')).toEqual([]);
  });
});
