import { setFlagsFromString } from 'node:v8';

/**
 * The heap growth the CLI worker sets unless told otherwise. V8 on its own lets a heap grow to up to
 * four times what its last full collection kept before it collects again (its factor for machines
 * with a large heap limit), and a busy worker allocates fast: at 1,000 concurrent runs its heaps held
 * 2.5 to 3 times their live data, about 450 MB of a 1 GB RSS (`bench:concurrency`). At 50% they
 * hold about 1.5 times, for more frequent full collections (runs/s unchanged within the noise).
 */
export const WORKER_HEAP_GROWING_PERCENT = 50;

/**
 * Sets V8's heap growing factor to 1 + percent / 100 for every heap of this process, the workflow
 * threads' among them (V8 reads it each time it sets the next collection's limit); 0 gives V8's own
 * dynamic factor back.
 */
export function setHeapGrowingPercent(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
