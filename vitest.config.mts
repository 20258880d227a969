import { defineConfig } from 'vitest/config';

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

const e2e = {
  globalSetup: ['test/e2e/global-setup.ts'],
  setupFiles: ['test/support/capture.ts'],
  testTimeout: 180_000,
  hookTimeout: 180_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          setupFiles: ['test/support/capture.ts'],
          testTimeout: 60_000,
        },
      },
      {
        // Every file has its own task queues and workflow ids, and a shared dev server: files run
        // three at a time (most of an e2e test is waiting for servers and processes, not CPU).
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], exclude: alone, maxWorkers: 3, ...e2e },
      },
      { test: { name: 'e2e-alone', include: alone, fileParallelism: false, ...e2e } },
    ],
  },
});
