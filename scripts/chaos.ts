/**
 * `npm run chaos [-- --runs N --seed S --temporal cluster]`: the seeded chaos run of support/chaos.ts at
 * full size (on a dev server, or on temporal-server and PostgreSQL),
 * printing its table. Exits 1 when any run is not settled, valid, complete and unduplicated, a
 * finished side-effecting call ran twice, a call of the non-idempotent MCP tool was executed twice on
 * its server, an MCP server process outlived its worker, or a sub-agent call's child has a problem (not
 * started exactly once, not settled, an invalid transcript, finished work asked of the model again, a
 * result in its caller that does not say how it ended).
 */
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runChaos } from '../support/chaos';
import { cliEntry, writeSharedBundle } from '../support/compiled';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '40' },
      seed: { type: 'string', default: '20261201' },
      concurrency: { type: 'string', default: '6' },
      temporal: { type: 'string', default: 'dev' },
    },
  });
  if (values.temporal !== 'dev' && values.temporal !== 'cluster')
    throw new Error(`--temporal is dev (a dev server, the default) or cluster (temporal-server on PostgreSQL)`);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  // One workflow bundle for every worker the run starts and restarts (each would bundle for ~4 s).
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-chaos-bundle-'));
  const bundle = join(folder, 'workflows.bundle.js');
  await writeSharedBundle(cliEntry(), bundle);
  process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE'] = bundle;
  const report = await runChaos({
    runs: Number(values.runs),
    seed: Number(values.seed),
    concurrency: Number(values.concurrency),
    temporal: values.temporal === 'cluster' ? 'cluster' : 'dev server',
    log: (line) => process.stderr.write(`${line}\n`),
  }).finally(() => rmSync(folder, { recursive: true, force: true }));
  console.log(report.table);
  const bad = report.runs.filter(
    (run) =>
      !run.settled ||
      !run.valid ||
      run.lost > 0 ||
      run.duplicated > 0 ||
      run.stuck ||
      run.status === 'failed' ||
      run.subagents.some((child) => child.problems.length > 0),
  );
  const mcp = report.mcp.duplicates > 0 || report.mcp.serverProcessesLeft > 0;
  return bad.length > 0 || report.sideEffects.finished > 0 || mcp ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
