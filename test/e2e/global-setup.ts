import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

let server: DevServer | undefined;

/** One real Temporal dev server (SQLite) for the whole e2e run. A missing binary fails the run. */
export async function setup(project: TestProject): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-e2e-'));
  server = await startDevServer({
    port: await freePort(),
    dbFile: join(folder, 'temporal.db'),
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 400 },
  });
  project.provide('temporalAddress', server.address);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
