import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/worker/free-port';
import { startWorld, type TestWorld } from '../support/temporal';
import { runCli, startCliWorker } from '../support/cli';

let world: TestWorld | undefined;
let proxy: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  proxy = undefined;
  await world?.close();
  world = undefined;
});

/**
 * The dev server speaks plain gRPC, so TLS is put in front of it: a TLS endpoint with a self-signed
 * certificate (ALPN h2) that forwards the decrypted stream. A client that does not trust the
 * certificate cannot connect; one configured with Temporal's TLS variables can.
 */
async function tlsInFront(target: string): Promise<{ address: string; caFile: string }> {
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
  const [host, port] = [target.split(':')[0]!, Number(target.split(':')[1])];
  proxy = createTlsServer({ key: readFileSync(key), cert: readFileSync(cert), ALPNProtocols: ['h2'] }, (socket) => {
    const upstream = tcpConnect(port, host);
    socket.pipe(upstream).on('error', () => socket.destroy());
    upstream.pipe(socket).on('error', () => upstream.destroy());
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  const listenPort = await freePort();
  await new Promise<void>((resolve) => proxy!.listen(listenPort, '127.0.0.1', resolve));
  return { address: `localhost:${listenPort}`, caFile: file('ca.pem') };
}

const cli = (args: string[], env: Record<string, string>) => runCli(args, env);

describe("connections from Temporal's environment configuration", () => {
  it('TLS with a private CA and an API key, read from TEMPORAL_* variables, for client and worker; an untrusted server is refused', async () => {
    world = await startWorld();
    const { address, caFile } = await tlsInFront(world.config.temporalAddress);
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
  });
});
