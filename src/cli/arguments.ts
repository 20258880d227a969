import { parseArgs } from 'node:util';
import { UsageError } from './errors';

type OptionSpec = Record<string, { type: 'string' | 'boolean' }>;
type ParsedValues<T extends OptionSpec> = { [K in keyof T]?: T[K]['type'] extends 'boolean' ? boolean : string };

/** `node:util` parseArgs with usage errors the CLI prints as `{"error": ...}`. */
export function parseCommandArgs<T extends OptionSpec>(
  args: string[],
  options: T,
  usage: string,
): { values: ParsedValues<T>; positionals: string[] } {
  try {
    const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: parsed.values as ParsedValues<T>, positionals: parsed.positionals };
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\nusage: ${usage}`);
  }
}

export function requirePositional(positionals: string[], index: number, name: string, usage: string): string {
  const value = positionals[index];
  if (value === undefined || value === '') throw new UsageError(`missing ${name}\nusage: ${usage}`);
  return value;
}
