#!/usr/bin/env node
import { Connection } from '@temporalio/client';
import {
  APPROVALS_SYNTAX,
  APPROVE_SYNTAX,
  approvalsCommand,
  approveCommand,
  REJECT_SYNTAX,
  rejectCommand,
} from './commands/approvals';
import { CHAT_SYNTAX, chatCommand } from './commands/chat';
import { CODEC_SERVER_SYNTAX, codecServerCommand } from './commands/codec-server';
import { compileCommand } from './commands/compile';
import { demoCommand } from './commands/demo';
import { LIST_SYNTAX, listCommand } from './commands/list';
import {
  ABORT_SYNTAX,
  abortCommand,
  FOLLOW_SYNTAX,
  followCommand,
  RUN_SYNTAX,
  runCommand,
  SEND_SYNTAX,
  sendCommand,
  SHOW_SYNTAX,
  showCommand,
} from './commands/runs';
import { SERVER_SYNTAX, serverCommand } from './commands/server';
import { WORKER_SYNTAX, workerCommand } from './commands/worker';
import { helpText, HelpRequested, parseCommand, type CommandSyntax } from './arguments';
import { CliError, exitCodeOf, toErrorReport } from './errors';
import { PatchloopClient } from '../client/patchloop-client';
import { configFromEnvironment, connectionOptions } from '../config/environment';

type Print = (line: string) => void;
type Command = (args: string[], print: Print) => Promise<unknown>;

const COMPILE_SYNTAX = {
  usage: 'patchloop compile <file>',
  summary: 'The next LLM request compiled from a saved state (JSON file, or - for standard input).',
  options: {},
  positionals: ['file'],
} as const;
const DEMO_SYNTAX = {
  usage: 'patchloop demo',
  summary:
    'A dev server, a worker and three example runs (tools, an abort, an approval); offline unless OPENAI_* is set. The server stays up until Ctrl-C.',
  options: {},
  positionals: [],
} as const;

/** Connects to Temporal, or says which address failed and what to do about it. */
async function connect(): Promise<PatchloopClient> {
  const config = configFromEnvironment();
  try {
    return PatchloopClient.on(await Connection.connect({ ...connectionOptions(config), connectTimeout: '5s' }), config);
  } catch (error) {
    throw new CliError(
      `cannot reach Temporal at ${config.temporalAddress} (${(error as Error).message}). Start a dev server with 'npx patchloop server', or set TEMPORAL_ADDRESS.`,
      'ConnectionError',
    );
  }
}

const withClient =
  (command: (client: PatchloopClient, args: string[], print: Print) => Promise<unknown>): Command =>
  async (args, print) => {
    const client = await connect();
    try {
      return await command(client, args, print);
    } finally {
      await client.close();
    }
  };

/** Every command, its syntax (usage, `--help`) and what runs it, in the order the help lists them. */
const commands: Record<
  string,
  { syntax: CommandSyntax<Record<string, { type: 'string' | 'boolean' }>>; run: Command }
> = {
  demo: { syntax: DEMO_SYNTAX, run: (args, print) => (parseCommand(args, DEMO_SYNTAX), demoCommand(args, print)) },
  server: { syntax: SERVER_SYNTAX, run: serverCommand },
  worker: { syntax: WORKER_SYNTAX, run: workerCommand },
  run: { syntax: RUN_SYNTAX, run: withClient(runCommand) },
  follow: { syntax: FOLLOW_SYNTAX, run: withClient(followCommand) },
  list: { syntax: LIST_SYNTAX, run: withClient(listCommand) },
  show: { syntax: SHOW_SYNTAX, run: withClient(showCommand) },
  abort: { syntax: ABORT_SYNTAX, run: withClient(abortCommand) },
  send: { syntax: SEND_SYNTAX, run: withClient(sendCommand) },
  chat: { syntax: CHAT_SYNTAX, run: withClient(chatCommand) },
  approvals: { syntax: APPROVALS_SYNTAX, run: withClient(approvalsCommand) },
  approve: { syntax: APPROVE_SYNTAX, run: withClient(approveCommand) },
  reject: { syntax: REJECT_SYNTAX, run: withClient(rejectCommand) },
  'codec-server': { syntax: CODEC_SERVER_SYNTAX, run: codecServerCommand },
  compile: {
    syntax: COMPILE_SYNTAX,
    run: async (args) => compileCommand(parseCommand(args, COMPILE_SYNTAX).positionals['file']),
  },
};

function usage(): string {
  const lines = Object.values(commands).map(({ syntax }) => `  ${syntax.usage.replace(/^patchloop /, '')}`);
  return `usage: patchloop <command> [--help]

${lines.join('\n')}

'patchloop <command> --help' explains a command. Exit codes: 0 done, 1 failed, 2 usage error.
Errors go to stderr as text (as JSON with --json).
Environment: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), PATCHLOOP_TASK_QUEUE
(patchloop), OPENAI_BASE_URL, OPENAI_API_KEY, PATCHLOOP_MODEL (gpt-4o-mini).
`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const print: Print = (line) => process.stdout.write(`${line}\n`);
  try {
    const command = commands[name];
    if (!command) throw new CliError(`unknown command '${name}'\n\n${usage()}`, 'UsageError');
    // Help needs no server: answer it before any connection is made.
    if (args.includes('--help') || args.includes('-h')) throw new HelpRequested(helpText(command.syntax));
    const output = await command.run(args, print);
    if (output !== undefined) print(JSON.stringify(output, null, 2));
    return 0;
  } catch (error) {
    if (error instanceof HelpRequested) {
      process.stdout.write(error.message);
      return 0;
    }
    const report = toErrorReport(error);
    process.stderr.write(args.includes('--json') ? `${JSON.stringify(report)}\n` : `error: ${report.error.message}\n`);
    return exitCodeOf(error);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${toErrorReport(error).error.message}\n`);
    process.exitCode = 1;
  },
);
