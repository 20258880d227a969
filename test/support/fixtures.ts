import { it as base } from 'vitest';
import { startWorld, type TestWorld, type WorldOptions } from './temporal';

/** Starts a world for the test that names it; the test's end closes it. */
export type StartWorld = (options?: WorldOptions) => Promise<TestWorld>;

/**
 * Vitest's `it` with the worlds an end-to-end test uses, named as its parameters (a world: a fake
 * model, an in-process worker on its own task queue, and a client; `startWorld` in ./temporal.ts):
 *
 * - `startWorld(options)`: starts a world for this test; each world a test started is closed when the
 *   test ends, passed or failed.
 * - `world`: one world for the whole file, started with `worldOptions` when a test first names it, closed
 *   after the file's last test. Its tests share its task queue and its fake model (the requests it
 *   recorded too). A file sets the options once: `const it = testWithWorld({...})`.
 */
const test = base
  .extend('startWorld', async ({}, { onCleanup }): Promise<StartWorld> => {
    const started: TestWorld[] = [];
    onCleanup(async () => {
      for (const world of started.reverse()) await world.close();
    });
    return async (options) => {
      const world = await startWorld(options);
      started.push(world);
      return world;
    };
  })
  .extend('worldOptions', { scope: 'file' }, {} as WorldOptions)
  .extend('world', { scope: 'file' }, async ({ worldOptions }, { onCleanup }) => {
    const world = await startWorld(worldOptions);
    onCleanup(() => world.close());
    return world;
  });

/**
 * `test` whose file-wide `world` starts with `options`: a new test API. (`test.override` would change
 * `test` itself, and the e2e files share modules: the next file in the process would get the options.)
 */
export function testWithWorld(options: WorldOptions) {
  return test.extend('worldOptions', { scope: 'file' }, options);
}

/** `test` under the name most files use. */
export const it = test;
