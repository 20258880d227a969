import { randomUUID } from 'node:crypto';
import type { AgentRunResult, RunEvent } from '../../runtime';
import { askApproval, terminalAsker } from './approvals';
import { parseCommandArgs, requirePositional } from '../arguments';
import { followRun, jsonOutput, textOutput } from '../../client/follow';
import type { PatchloopClient, RunHandle } from '../../client/patchloop-client';
import { UsageError } from '../errors';

type Print = (line: string) => void;

const RUN_USAGE = 'patchloop run <agent> <text> [--id ID] [--follow [--json]] [--max-tool-calls N]';
const write = (text: string) => void process.stdout.write(text);

export async function runCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      id: { type: 'string' },
      follow: { type: 'boolean' },
      json: { type: 'boolean' },
      'max-tool-calls': { type: 'string' },
    },
    RUN_USAGE,
  );
  const agent = requirePositional(positionals, 0, 'agent', RUN_USAGE);
  const text = requirePositional(positionals, 1, 'text', RUN_USAGE);
  const maxToolCalls = values['max-tool-calls'] === undefined ? undefined : Number(values['max-tool-calls']);
  if (maxToolCalls !== undefined && !(Number.isInteger(maxToolCalls) && maxToolCalls >= 0))
    throw new UsageError(`--max-tool-calls must be a whole number >= 0\nusage: ${RUN_USAGE}`);
  const run = await client.start(
    { agent, input: text, ...(maxToolCalls !== undefined ? { max_tool_calls: maxToolCalls } : {}) },
    { workflowId: values.id ?? `run-${randomUUID()}` },
  );
  if (!values.follow) return { workflow_id: run.workflowId, task_queue: client.taskQueue };
  return follow(run, Boolean(values.json), print);
}

const FOLLOW_USAGE = 'patchloop follow <id> [--json]';
/** Follows a run that is already going (or finished): its events, then live tokens, then a summary. */
export async function followCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { json: { type: 'boolean' } }, FOLLOW_USAGE);
  return follow(client.run(requirePositional(positionals, 0, 'id', FOLLOW_USAGE)), Boolean(values.json), print);
}

async function follow(run: RunHandle, json: boolean, print: Print): Promise<undefined> {
  if (json) {
    await followRun(run, jsonOutput(write));
    return undefined;
  }
  print(`run ${run.workflowId}`);
  // At a terminal, calls that wait for approval are put to the person following the run.
  const terminal = terminalAsker();
  try {
    const onEvent = terminal ? (event: RunEvent) => askApproval(run, event, terminal.ask, print) : undefined;
    printOutcome(await followRun(run, textOutput(write), onEvent ? { onEvent } : {}), print);
  } finally {
    terminal?.close();
  }
  return undefined;
}

export function printOutcome(result: AgentRunResult, print: Print): void {
  if (result.status === 'completed') print(`answer: ${result.answer}`);
  else
    print(
      `aborted${result.abort_reason ? ` (${result.abort_reason})` : ''}; the transcript ends with: ${JSON.stringify(result.transcript.at(-1)?.['content'])}`,
    );
  if (result.usage)
    print(
      `usage: ${result.usage.prompt_tokens} prompt + ${result.usage.completion_tokens} completion = ${result.usage.total_tokens} tokens`,
    );
}

const ABORT_USAGE = 'patchloop abort <id> [--reason TEXT]';
export async function abortCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { reason: { type: 'string' } }, ABORT_USAGE);
  const id = requirePositional(positionals, 0, 'id', ABORT_USAGE);
  await client.run(id).abort(values.reason ?? '');
  return { workflow_id: id, signal: 'abort', reason: values.reason ?? '' };
}

const SEND_USAGE = 'patchloop send <id> <text> [--no-wait]';
/** To a run: signal `user_message`. To a session: update `send`, printing the turn's reply (or queue with --no-wait). */
export async function sendCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { 'no-wait': { type: 'boolean' } }, SEND_USAGE);
  const id = requirePositional(positionals, 0, 'id', SEND_USAGE);
  const text = requirePositional(positionals, 1, 'text', SEND_USAGE);
  if ((await client.workflowType(id)) === 'chatSession' && !values['no-wait']) {
    return { workflow_id: id, ...(await client.session(id).send(text)) };
  }
  await client.run(id).sendUserMessage(text);
  return { workflow_id: id, signal: 'user_message' };
}

const SHOW_USAGE = 'patchloop show <id> [--json]';
export async function showCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { json: { type: 'boolean' } }, SHOW_USAGE);
  const id = requirePositional(positionals, 0, 'id', SHOW_USAGE);
  const run = client.run(id);
  const [status, transcript] = await Promise.all([run.status(), run.transcript()]);
  if (values.json) return { workflow_id: id, status, transcript };
  print(
    `run ${id}: ${status.state}, iteration ${status.iteration}, ${status.llm_calls} model call(s), ${status.tool_calls} tool call(s)`,
  );
  print(`history: ${status.history.events} events, ${status.history.bytes} bytes`);
  for (const message of transcript) {
    const calls = Array.isArray(message['tool_calls'])
      ? ` [calls ${(message['tool_calls'] as Array<{ function: { name: string } }>).map((call) => call.function.name).join(', ')}]`
      : '';
    print(
      `${String(message['role']).padEnd(9)} ${typeof message['content'] === 'string' ? message['content'] : JSON.stringify(message['content'])}${calls}`,
    );
  }
  return undefined;
}

export type { AgentRunResult };
