/**
 * One instance of each module-level zod schema per worker thread, instead of one per run.
 *
 * The SDK evaluates a workflow bundle's modules once per run, so every cached run would build its own
 * copy of every schema (about 800 zod objects, most of a cached run's memory). This module is preloaded
 * into the bundle's shared scope (`workflowBundleOptions`): the first run builds a schema and later
 * runs reuse it. The map lives in this closure, out of reach of the SDK's freeze of shared exports,
 * because zod writes to a schema as it is used (lazy members, memoized parsers). Outside a workflow
 * the module is evaluated once per process and this is a plain constant.
 *
 * Keys are `<file>#<name>` and unique (a unit test checks): a schema is a value, so which run built it
 * does not matter.
 */
const schemas = new Map<string, unknown>();

export function sharedSchema<T>(key: string, build: () => T): T {
  if (schemas.has(key)) return schemas.get(key) as T;
  const schema = build();
  schemas.set(key, schema);
  return schema;
}
