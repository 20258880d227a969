#!/usr/bin/env node
import { compileCommand } from './commands/compile';
import { toErrorReport, UsageError } from './errors';

const USAGE = `patchloop <command>

  compile FILE|-        print the next LLM request compiled from a saved state (JSON)
`;

type Command = (args: string[]) => Promise<unknown>;

const commands: Record<string, Command> = {
  compile: async ([path]) => compileCommand(path),
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return name === undefined ? 1 : 0;
  }
  const command = commands[name];
  try {
    if (!command) throw new UsageError(`unknown command '${name}'\n${USAGE}`);
    const output = await command(args);
    if (output !== undefined) process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
    return 0;
  } catch (error) {
    process.stdout.write(`${JSON.stringify(toErrorReport(error))}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${JSON.stringify(toErrorReport(error))}\n`);
    process.exitCode = 1;
  },
);
