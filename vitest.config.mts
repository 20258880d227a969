import { defineConfig } from 'vitest/config';

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
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          setupFiles: ['test/support/capture.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          // Every e2e file shares one dev server and spawns workers: run files one at a time.
          fileParallelism: false,
          pool: 'forks',
        },
      },
    ],
  },
});
