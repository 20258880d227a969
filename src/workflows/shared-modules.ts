/**
 * The bundle's preloaded modules (`workflowBundleOptions`): evaluated once per worker thread and
 * shared by its runs, where every other module is evaluated once per run. zod holds no per-run state;
 * the schema registry is what lets runs share schemas (see `sharedSchema`). zod is re-exported, not
 * imported for effect: it declares itself free of side effects, so the bundler would drop a bare import.
 */
import { z } from 'zod';

export { z };
export { sharedSchema } from '../context/shared-schema';

// zod records its defaults (locale, memoizer) in a global on the first schema built; the SDK freezes
// the shared globals after preloading, so they must exist by then.
z.object({ defaults: z.array(z.string()) });
