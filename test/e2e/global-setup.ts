import { Client, Connection } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';
import { freePort } from '../../src/worker/free-port';
import { freshCompiledCli, writeSharedBundle } from '../../support/compiled';
import { startRedis, type RedisServer } from '../../support/redis';
import { startTemporalCluster, type TemporalCluster } from '../../support/temporal-cluster';
import { cpuSeconds, recordCpu } from '../support/cpu-time';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    /** Which Temporal the run is on: the dev server, or temporal-server on PostgreSQL (the cluster projects). */
    temporalKind: 'dev server' | 'cluster';
    /**
     * Where the server keeps its data, for tests that look into it for what must never be stored: the
     * dev server's SQLite file, or the cluster's PostgreSQL data folder.
     */
    temporalStorage: string;
    /** The server's HTTP API, for services without an SDK. */
    temporalHttpUrl: string;
    /** A real redis-server for the shared token stream. */
    redisUrl: string;
  }
}

let server: DevServer | undefined;
let cluster: TemporalCluster | undefined;
let redis: RedisServer | undefined;

/**
 * One real Temporal for the whole e2e run (a missing binary fails the run): the dev server (SQLite),
 * or for the cluster projects temporal-server on PostgreSQL (support/temporal-cluster.ts); and, meanwhile, the compiled CLI built from the current sources and one workflow bundle that every worker
 * of the run loads (PATCHLOOP_TEST_CLI, PATCHLOOP_TEST_WORKFLOW_BUNDLE: test files inherit them).
 */
export async function setup(project: TestProject): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-e2e-'));
  const dbFile = join(folder, 'temporal.db');
  const bundleFile = join(folder, 'workflows.bundle.js');
  const compiled = (async () => {
    const cli = await freshCompiledCli();
    await writeSharedBundle(cli, bundleFile);
    return cli;
  })();
  const dynamicConfig = { 'limit.historyCount.suggestContinueAsNew': 400 };
  const onCluster = project.name.startsWith('cluster');
  const started = onCluster
    ? startTemporalCluster({ folder: join(folder, 'cluster'), dynamicConfig }).then((running) => {
        cluster = running;
        return { address: running.address, httpUrl: running.httpUrl, storage: running.databaseFolder };
      })
    : startDevServer({ port: await freePort(), httpPort: await freePort(), dbFile, dynamicConfig }).then((dev) => {
        server = dev;
        return { address: dev.address, httpUrl: dev.httpUrl!, storage: dbFile };
      });
  const [cli, temporal] = await Promise.allSettled([compiled, started]);
  if (cli.status === 'rejected') throw cli.reason;
  if (temporal.status === 'rejected') throw temporal.reason;
  process.env['PATCHLOOP_TEST_CLI'] = cli.value;
  process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE'] = bundleFile;
  project.provide('temporalAddress', temporal.value.address);
  project.provide('temporalKind', onCluster ? 'cluster' : 'dev server');
  project.provide('temporalStorage', temporal.value.storage);
  project.provide('temporalHttpUrl', temporal.value.httpUrl);
  redis = await startRedis();
  project.provide('redisUrl', redis.url);
}

/** No history of the whole suite may pass this: payloads go by reference, runs continue as new. */
const HISTORY_BUDGET_BYTES = 5 * 1024 * 1024;

export async function teardown(): Promise<void> {
  try {
    const address = server?.address ?? cluster?.address;
    if (address) await checkHistoryBudget(address);
  } finally {
    if (server?.process.pid) recordCpu('temporal dev server', cpuSeconds(server.process.pid));
    const serverPid = cluster?.serverPid();
    if (serverPid) recordCpu('temporal-server', cpuSeconds(serverPid));
    await Promise.all([server?.stop(), cluster?.stop(), redis?.stop()]);
  }
}

/** Fails the run when any workflow the suite ran has a history over the budget (Temporal's own figure). */
async function checkHistoryBudget(address: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const over: string[] = [];
    for await (const execution of client.workflow.list({ query: `HistorySizeBytes > ${HISTORY_BUDGET_BYTES}` })) {
      over.push(`${execution.workflowId} (${execution.historySize ?? '?'} bytes)`);
    }
    let listed = 0;
    for await (const _execution of client.workflow.list()) listed += 1;
    if (listed === 0) throw new Error('the history budget check saw no workflows at all');
    if (over.length > 0) throw new Error(`histories over ${HISTORY_BUDGET_BYTES} bytes: ${over.join(', ')}`);
    console.log(`history budget: ${listed} workflows, none over ${HISTORY_BUDGET_BYTES} bytes`);
  } finally {
    await connection.close();
  }
}
