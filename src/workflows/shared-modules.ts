/**
 * Preloaded first (`workflowBundleOptions`), before the workflows: zod and the schema registry, which
 * a bundle that preloads only this module shares all the same (see `sharedSchema`). zod is re-exported, not
 * imported for effect: it declares itself free of side effects, so the bundler would drop a bare import.
 */
import { z } from 'zod';

export { z };
export { sharedSchema } from '../context/shared-schema';

// zod records its defaults (locale, memoizer) in a global on the first schema built; the SDK freezes
// the shared globals after preloading, so they must exist by then.
z.object({ defaults: z.array(z.string()) });
