#!/usr/bin/env node
import { approvalsCommand, approveCommand, rejectCommand } from './commands/approvals';
import { chatCommand } from './commands/chat';
import { compileCommand } from './commands/compile';
import { demoCommand } from './commands/demo';
import { abortCommand, followCommand, runCommand, sendCommand, showCommand } from './commands/runs';
import { serverCommand } from './commands/server';
import { workerCommand } from './commands/worker';
import { toErrorReport, UsageError } from './errors';
import { PatchloopClient } from '../client/patchloop-client';
import { configFromEnvironment } from '../config/environment';

const USAGE = `patchloop <command>

  demo                              dev server + worker + example runs, offline unless OPENAI_* is set
  server [--port N] [--ui-port N]   the Temporal dev server (SQLite in .patchloop/) and its web UI
  worker [--agents FILE.json]       a worker serving the example agent (or the agents in FILE)
  run <agent> <text> [--id ID] [--follow [--json]] [--max-tool-calls N]
  follow <id> [--json]              live events and tokens of a run (one JSON event per line with --json)
  abort <id> [--reason TEXT]        signal 'abort': the run ends with a valid transcript
  send <id> <text> [--no-wait]      a run: signal 'user_message'; a session: its reply (update 'send')
  chat <agent> [--id SESSION_ID]    an interactive chat on a long-lived session (reconnects by id)
  show <id> [--json]                status and transcript of a run
  approvals <id>                    tool calls waiting for a decision
  approve <id> <call id> [--reason TEXT]   let a waiting tool call run (update 'approve')
  reject <id> <call id> --reason TEXT      refuse it: the model gets the reason as the call's result
  compile FILE|-                    the next LLM request compiled from a saved state (JSON)

Environment: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), PATCHLOOP_TASK_QUEUE
(patchloop), OPENAI_BASE_URL, OPENAI_API_KEY, PATCHLOOP_MODEL (gpt-4o-mini).
`;

type Print = (line: string) => void;
type Command = (args: string[], print: Print) => Promise<unknown>;

const withClient =
  (command: (client: PatchloopClient, args: string[], print: Print) => Promise<unknown>): Command =>
  async (args, print) => {
    const client = await PatchloopClient.connect(configFromEnvironment());
    try {
      return await command(client, args, print);
    } finally {
      await client.close();
    }
  };

const commands: Record<string, Command> = {
  compile: async ([path]) => compileCommand(path),
  demo: demoCommand,
  server: serverCommand,
  worker: workerCommand,
  run: withClient(runCommand),
  follow: withClient(followCommand),
  abort: withClient(abortCommand),
  send: withClient(sendCommand),
  show: withClient(showCommand),
  chat: withClient(chatCommand),
  approvals: withClient(approvalsCommand),
  approve: withClient(approveCommand),
  reject: withClient(rejectCommand),
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return name === undefined ? 1 : 0;
  }
  const print: Print = (line) => process.stdout.write(`${line}\n`);
  try {
    const command = commands[name];
    if (!command) throw new UsageError(`unknown command '${name}'\n${USAGE}`);
    const output = await command(args, print);
    if (output !== undefined) print(JSON.stringify(output, null, 2));
    return 0;
  } catch (error) {
    print(JSON.stringify(toErrorReport(error)));
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
