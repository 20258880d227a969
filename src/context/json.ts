import { z } from 'zod';
import { sharedSchema } from './shared-schema';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const JsonValue: z.ZodType<JsonValue> = sharedSchema('context/json#JsonValue', () => z.json());
export const JsonObject: z.ZodType<JsonObject> = sharedSchema('context/json#JsonObject', () =>
  z.record(z.string(), z.json()),
);

/** Structural deep copy (the workflow sandbox has no `structuredClone`). */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const copy = new Array(value.length);
    for (let index = 0; index < value.length; index += 1) copy[index] = cloneJson(value[index]);
    return copy as T;
  }
  const copy: Record<string, unknown> = {};
  // for...in is the fastest own-key walk here; JSON objects inherit no enumerable keys.
  for (const key in value) {
    const item = cloneJson((value as Record<string, unknown>)[key]);
    // JSON.parse makes "__proto__" an own key; plain assignment would set the prototype.
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy as T;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** JSON text with object keys sorted at every depth: equal for two values alike whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}
