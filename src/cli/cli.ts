#!/usr/bin/env node
import { helpText, HelpRequested, parseCommand, type CommandSyntax, type OptionSpec } from './arguments';
import { EXIT, exitCodeOf, toErrorReport, UsageError, WithStatus } from './errors';
import type { withClient } from './connect';
import * as syntax from './syntax';

type Print = (line: string) => void;
type Command = (args: string[], print: Print) => Promise<unknown>;

type Entry = { syntax: CommandSyntax<OptionSpec>; run: Command; errors?: 'stdout' };
type ClientCommand = Parameters<typeof withClient>[0];

/** A command that needs a connection: its arguments are checked before the connection is made. */
function clientCommand(commandSyntax: CommandSyntax<OptionSpec>, load: () => Promise<ClientCommand>): Entry {
  return {
    syntax: commandSyntax,
    run: async (args, print) => {
      parseCommand(args, commandSyntax);
      const command = await load();
      return (await import('./connect.js')).withClient(command, args, print);
    },
  };
}

/** A command that runs on its own (a server, a worker, a compile). */
function plainCommand(commandSyntax: CommandSyntax<OptionSpec>, load: () => Promise<Command>): Entry {
  return { syntax: commandSyntax, run: async (args, print) => (await load())(args, print) };
}

/**
 * Every command: its syntax (usage, `--help`) and how to run it, in the order the help lists them. A
 * command's module is loaded only when it runs, so help and light commands start without the SDK.
 * `errors: 'stdout'`: the command's documented output is JSON, failures included (`compile`).
 */
const commands: Record<string, Entry> = {
  demo: plainCommand(syntax.DEMO_SYNTAX, async () => {
    const { demoCommand } = await import('./commands/demo.js');
    return (args, print) => (parseCommand(args, syntax.DEMO_SYNTAX), demoCommand(args, print));
  }),
  server: plainCommand(syntax.SERVER_SYNTAX, async () => (await import('./commands/server.js')).serverCommand),
  worker: plainCommand(syntax.WORKER_SYNTAX, async () => {
    const [{ workerCommand }, { releaseRuntime }] = await Promise.all([
      import('./commands/worker.js'),
      import('../worker/worker-log.js'),
    ]);
    return (args, print) => workerCommand(args, print).finally(releaseRuntime);
  }),
  bundle: plainCommand(syntax.BUNDLE_SYNTAX, async () => (await import('./commands/bundle.js')).bundleCommand),
  run: clientCommand(syntax.RUN_SYNTAX, async () => (await import('./commands/runs.js')).runCommand),
  follow: clientCommand(syntax.FOLLOW_SYNTAX, async () => (await import('./commands/runs.js')).followCommand),
  list: clientCommand(syntax.LIST_SYNTAX, async () => (await import('./commands/list.js')).listCommand),
  show: clientCommand(syntax.SHOW_SYNTAX, async () => (await import('./commands/runs.js')).showCommand),
  abort: clientCommand(syntax.ABORT_SYNTAX, async () => (await import('./commands/runs.js')).abortCommand),
  fork: clientCommand(syntax.FORK_SYNTAX, async () => (await import('./commands/fork.js')).forkCommand),
  eval: clientCommand(syntax.EVAL_SYNTAX, async () => (await import('./commands/eval.js')).evalCommand),
  rewind: clientCommand(syntax.REWIND_SYNTAX, async () => (await import('./commands/fork.js')).rewindCommand),
  post: clientCommand(syntax.POST_SYNTAX, async () => (await import('./commands/runs.js')).postCommand),
  send: clientCommand(syntax.SEND_SYNTAX, async () => (await import('./commands/runs.js')).sendCommand),
  chat: clientCommand(syntax.CHAT_SYNTAX, async () => (await import('./commands/chat.js')).chatCommand),
  approvals: clientCommand(
    syntax.APPROVALS_SYNTAX,
    async () => (await import('./commands/approvals.js')).approvalsCommand,
  ),
  approve: clientCommand(syntax.APPROVE_SYNTAX, async () => (await import('./commands/approvals.js')).approveCommand),
  reject: clientCommand(syntax.REJECT_SYNTAX, async () => (await import('./commands/approvals.js')).rejectCommand),
  schedule: clientCommand(syntax.SCHEDULE_SYNTAX, async () => (await import('./commands/schedule.js')).scheduleCommand),
  budget: clientCommand(syntax.BUDGET_SYNTAX, async () => (await import('./commands/budget.js')).budgetCommand),
  event: clientCommand(syntax.EVENT_SYNTAX, async () => (await import('./commands/event.js')).eventCommand),
  serve: clientCommand(syntax.SERVE_SYNTAX, async () => (await import('./commands/serve.js')).serveCommand),
  keys: plainCommand(syntax.KEYS_SYNTAX, async () => (await import('./commands/keys.js')).keysCommand),
  console: clientCommand(syntax.CONSOLE_SYNTAX, async () => (await import('./commands/console.js')).consoleCommand),
  'codec-server': plainCommand(
    syntax.CODEC_SERVER_SYNTAX,
    async () => (await import('./commands/codec-server.js')).codecServerCommand,
  ),
  mcp: plainCommand(syntax.MCP_SYNTAX, async () => (await import('./commands/mcp.js')).mcpCommand),
  policy: plainCommand(syntax.POLICY_SYNTAX, async () => (await import('./commands/policy.js')).policyCommand),
  compile: {
    ...plainCommand(syntax.COMPILE_SYNTAX, async () => {
      const { compileCommand } = await import('./commands/compile.js');
      return async (args) => compileCommand(parseCommand(args, syntax.COMPILE_SYNTAX).positionals['file']);
    }),
    errors: 'stdout',
  },
};

function usage(): string {
  const lines = Object.values(commands).map((command) => `  ${command.syntax.usage.replace(/^patchloop /, '')}`);
  return `usage: patchloop <command> [--help] [--json]

${lines.join('\n')}

'patchloop <command> --help' explains a command. Exit codes: 0 done, 1 failed, 2 usage error, 3 run
started but no worker has taken it, 4 the run had already ended, 130 Ctrl-C (the run goes on), 141 the
reader closed the pipe.
Errors go to stderr as text, or as one JSON object {"error": {"type", "message"}} with --json
(compile prints its errors that way on stdout).
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
  const command = commands[name];
  try {
    if (!command) throw new UsageError(`unknown command '${name}'\n\n${usage()}`);
    // Help needs no server: answer it before any connection is made.
    if (args.includes('--help') || args.includes('-h')) throw new HelpRequested(helpText(command.syntax));
    const returned = await command.run(args, print);
    const output = returned instanceof WithStatus ? returned.output : returned;
    if (output !== undefined) print(JSON.stringify(output, null, 2));
    return returned instanceof WithStatus ? returned.status : EXIT.done;
  } catch (error) {
    if (error instanceof HelpRequested) {
      process.stdout.write(error.message);
      return 0;
    }
    const report = toErrorReport(error);
    if (command?.errors === 'stdout') print(JSON.stringify(report));
    else
      process.stderr.write(
        args.includes('--json') ? `${JSON.stringify(report)}\n` : `error: ${report.error.message}\n`,
      );
    return exitCodeOf(error);
  }
}

/**
 * A reader that stopped reading (`show X | head -3`, `chat | head`) ends every command quietly, as it
 * ends `cat` or `git`: no stack trace, exit status 141 (128 + SIGPIPE). Other stream errors stay errors.
 */
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.closedPipe);
    throw error;
  });

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${toErrorReport(error).error.message}\n`);
    process.exitCode = 1;
  },
);
