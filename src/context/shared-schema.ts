import { z } from 'zod';

/**
 * One instance of each module-level zod schema per worker thread, instead of one per run, and a schema
 * the SDK's freeze leaves alone.
 *
 * The SDK evaluates a workflow bundle's modules once per run unless they are preloaded. patchloop's
 * bundle (`workflowBundleOptions`) preloads its workflows, so every module is evaluated once per
 * thread; a bundle of yours that imports `patchloop/workflows` without preloading still shares its
 * schemas through this registry (about 800 zod objects a run would otherwise build). The map lives in
 * this closure, out of reach of the SDK's deep freeze of what preloaded modules export: zod writes to
 * a schema as it is used (lazy members, memoized parsers), so each schema is shielded from the freeze
 * too. Outside a workflow the module is evaluated once per process and this is a plain constant.
 *
 * Keys are `<file>#<name>` and unique (a unit test checks): a schema is a value, so which run built it
 * does not matter.
 */
const schemas = new Map<string, unknown>();

export function sharedSchema<T>(key: string, build: () => T): T {
  if (schemas.has(key)) return schemas.get(key) as T;
  const schema = build();
  if (schema instanceof z.ZodType) shieldFromFreeze(schema);
  schemas.set(key, schema);
  return schema;
}

/**
 * The SDK deep-freezes what preloaded modules export, and zod writes to a schema as it is used. Its
 * freeze reads each own property before it freezes the object and skips a value whose freeze throws,
 * and names an integer key first: a throwing getter at "0" makes it leave the schema as it is. Not
 * enumerable, so nothing else sees it.
 */
function shieldFromFreeze(schema: object): void {
  Object.defineProperty(schema, '0', {
    enumerable: false,
    get: () => {
      throw new TypeError('a shared schema is not frozen');
    },
  });
}
