import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * End-to-end files, longest first (seconds each took in a CI run, `test/e2e-durations.json`; files not
 * in it first of all): three at a time on two cores, a long file started last would end the phase alone.
 * On a fresh clone Vitest has no timings of its own and starts the largest files first instead.
 * Refresh the table from the "per file" lines `npm test` prints when files change much.
 */
/**
 * How long one test or hook may take before Vitest calls it hung. Bounds on a hang, never on speed: a
 * test that needs a time bound asserts it itself, with a margin a loaded machine keeps. A test may raise
 * its own bound, never lower it (test/unit/test-timeouts.test.ts): under a load of 12 the lint tests'
 * first TypeScript program alone took over a minute.
 */
const timeouts = JSON.parse(readFileSync(new URL('./test/timeouts.json', import.meta.url), 'utf8')) as {
  unit: number;
  e2e: number;
};

const durations = JSON.parse(readFileSync(new URL('./test/e2e-durations.json', import.meta.url), 'utf8')) as Record<
  string,
  number
>;

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const seconds = (file: TestSpecification) =>
      durations[relative(file.project.config.root, file.moduleId)] ?? Number.POSITIVE_INFINITY;
    // Projects keep Vitest's order; within one, the longest files start first (a stable sort).
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) =>
        a.file.project.name !== b.file.project.name
          ? a.index - b.index
          : seconds(b.file) - seconds(a.file) || a.index - b.index,
      )
      .map(({ file }) => file);
  }
}

/**
 * End-to-end files whose assertions include a latency bound (an abort ends a run within 2 or 3 s, a
 * follower gets its prefix within 1.5 s): they run one at a time, after the others, so the bound
 * measures patchloop and not a machine busy with other test files.
 */
const alone = [
  'test/e2e/abort.test.ts',
  'test/e2e/approvals.test.ts',
  'test/e2e/redis-transport.test.ts',
  'test/e2e/streaming.test.ts',
];

/**
 * Files that run on the production-shaped server only (in `npm test`): the chaos run (its server
 * restart is temporal-server's), Worker Deployments, a long run across continue-as-new.
 */
const clusterOnly = [
  'test/e2e/chaos.test.ts',
  'test/e2e/worker-versions.test.ts',
  'test/e2e/run-continue-as-new.test.ts',
];

/**
 * The cluster subset, run against temporal-server on PostgreSQL (support/temporal-cluster.ts) after the
 * dev-server phases: what only a production-shaped server shows (a server restart under chaos, SQL
 * visibility behind list and the console, several worker processes, versioning, sub-agents, approvals,
 * continue-as-new). `npm run test:cluster` runs every e2e file there instead.
 */
const cluster = [...clusterOnly, 'test/e2e/subagents.test.ts', 'test/e2e/console.test.ts', 'test/cluster/**/*.test.ts'];
/** The cluster subset's latency-bound file, run after it on a cluster of its own, alone. */
const clusterAlone = ['test/e2e/approvals.test.ts'];

/**
 * Unit test files share their worker process's modules (`isolate: false`): each file imported the SDK,
 * the sources and their schemas again, seconds of CPU per file. End-to-end files stay isolated: a file's
 * clients and workers can leave a retry timer behind, which fails the run as an unhandled error once the
 * process goes on with the next file (seen once: a closed connection's gRPC retry after messages.test.ts).
 * What a file changes for its process it puts back all the same (test/support/capture.ts: the
 * environment; fixtures.ts: `testWithWorld` instead of an override of the shared `test`).
 */
const shared = { isolate: false };

const e2e = {
  globalSetup: ['test/e2e/global-setup.ts'],
  setupFiles: ['test/support/capture.ts'],
  testTimeout: timeouts.e2e,
  hookTimeout: timeouts.e2e,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          ...shared,
          setupFiles: ['test/support/capture.ts'],
          testTimeout: timeouts.unit,
          hookTimeout: timeouts.unit,
        },
      },
      {
        // Every file has its own task queues and workflow ids, and a shared dev server: files run
        // three at a time (most of an e2e test is waiting for servers and processes, not CPU).
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [...alone, ...clusterOnly],
          maxWorkers: 3,
          ...e2e,
        },
      },
      { test: { name: 'e2e-alone', include: alone, fileParallelism: false, ...e2e } },
      { test: { name: 'cluster', include: cluster, maxWorkers: 2, ...e2e } },
      { test: { name: 'cluster-alone', include: clusterAlone, fileParallelism: false, ...e2e } },
      {
        test: {
          name: 'cluster-all',
          include: ['test/e2e/**/*.test.ts', 'test/cluster/**/*.test.ts'],
          exclude: alone,
          maxWorkers: 3,
          ...e2e,
        },
      },
      { test: { name: 'cluster-all-alone', include: alone, fileParallelism: false, ...e2e } },
    ],
  },
});
