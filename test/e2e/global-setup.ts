import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';
import { freePort } from '../../src/worker/free-port';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    /** The dev server's SQLite file: tests look into it for what must never be stored. */
    temporalDbFile: string;
  }
}

let server: DevServer | undefined;

/** One real Temporal dev server (SQLite) for the whole e2e run. A missing binary fails the run. */
export async function setup(project: TestProject): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-e2e-'));
  const dbFile = join(folder, 'temporal.db');
  server = await startDevServer({
    port: await freePort(),
    dbFile,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 400 },
  });
  project.provide('temporalAddress', server.address);
  project.provide('temporalDbFile', dbFile);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
