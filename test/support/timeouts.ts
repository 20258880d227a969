/**
 * How long one test or hook may take before Vitest calls it hung (vitest.config.mts). Bounds on a hang,
 * never on speed: a test that needs a time bound asserts it itself, with a margin a loaded machine keeps.
 * A test may raise its own bound, never lower it (test/unit/test-timeouts.test.ts): under a load of 12
 * the lint tests' first TypeScript program alone took over a minute.
 */
export const UNIT_TIMEOUT_MS = 600_000;
export const E2E_TIMEOUT_MS = 180_000;
