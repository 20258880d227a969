import { parseArgs } from 'node:util';
import { UsageError } from './errors';

/**
 * `multiple`: a string option given any number of times (its values in order). `optionalValue`: a string
 * option that may also stand alone (its value is then ''), as the last word or before another option.
 */
export type OptionSpec = Readonly<
  Record<
    string,
    {
      readonly type: 'string' | 'boolean';
      readonly short?: string;
      readonly multiple?: true;
      readonly optionalValue?: true;
    }
  >
>;
type ParsedValues<T extends OptionSpec> = {
  [K in keyof T]?: T[K]['type'] extends 'boolean' ? boolean : T[K]['multiple'] extends true ? string[] : string;
};

/**
 * A command's syntax: its usage line, what it does, its options, and its positionals in order: `name`
 * is required, `[name]` optional, `name...` takes the remaining words joined by spaces (so
 * `run assistant add 2 and 3` is the text "add 2 and 3").
 */
export interface CommandSyntax<T extends OptionSpec> {
  usage: string;
  summary: string;
  options: T;
  positionals: readonly string[];
}

/** `--help` on any command: its usage and summary go to stdout, exit code 0. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
}

export function helpText(syntax: CommandSyntax<OptionSpec>): string {
  return `usage: ${syntax.usage}\n\n${syntax.summary}\n`;
}

/**
 * `node:util` parseArgs, strict: unknown options and extra words are usage errors, never ignored. Every
 * command takes `--help` and `--json` (errors as one JSON object; output as JSON where it has a text form).
 */
export function parseCommand<T extends OptionSpec>(
  args: string[],
  syntax: CommandSyntax<T>,
): { values: ParsedValues<T>; positionals: Record<string, string | undefined> } {
  let parsed: ReturnType<typeof parseArgs>;
  const options = Object.fromEntries(
    Object.entries(syntax.options).map(([name, { optionalValue: _optional, ...spec }]) => [name, spec]),
  );
  try {
    parsed = parseArgs({
      args: withOptionalValues(args, syntax.options),
      options: { json: { type: 'boolean' }, ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    if (args.includes('--help') || args.includes('-h')) throw new HelpRequested(helpText(syntax));
    throw new UsageError(
      `${(error as Error).message.replace(/\. To specify a positional.*$/s, '')}\nusage: ${syntax.usage}`,
    );
  }
  if (parsed.values['help']) throw new HelpRequested(helpText(syntax));
  const words = parsed.positionals;
  const named: Record<string, string | undefined> = {};
  let index = 0;
  for (const spec of syntax.positionals) {
    const optional = spec.startsWith('[');
    const rest = spec.endsWith('...') || spec.endsWith('...]');
    const name = spec.replace(/^\[|\]$/g, '').replace(/\.\.\.$/, '');
    const value = rest ? words.slice(index).join(' ') : words[index];
    index = rest ? words.length : index + 1;
    if ((value === undefined || value === '') && !optional)
      throw new UsageError(`missing ${name}\nusage: ${syntax.usage}`);
    named[name] = value === '' ? undefined : value;
  }
  if (index < words.length) throw new UsageError(`unexpected argument '${words[index]}'\nusage: ${syntax.usage}`);
  return { values: parsed.values as ParsedValues<T>, positionals: named };
}

/** `--name` of an option with an optional value, standing alone, as `--name=` (before a `--`, which ends options). */
function withOptionalValues(args: string[], options: OptionSpec): string[] {
  const end = args.includes('--') ? args.indexOf('--') : args.length;
  return args.map((arg, index) => {
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    const alone = index + 1 >= end || args[index + 1]!.startsWith('-');
    return index < end && name && options[name]?.optionalValue && alone ? `${arg}=` : arg;
  });
}

/** A `--port` value (0 to 65535; 0: any free port), or `fallback` when the option is absent. */
export function portOption(value: string | undefined, fallback: number, usage: string): number {
  const port = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be a port number\nusage: ${usage}`);
  return port;
}

/** A whole number >= 1 for the option `flag`, or `fallback` when it is absent. */
export function countOption(value: string | undefined, flag: string, fallback: number, usage: string): number {
  const count = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(count) || count < 1)
    throw new UsageError(`${flag} must be a whole number >= 1\nusage: ${usage}`);
  return count;
}
