import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseCommand } from '../arguments';
import { describeEvent } from '../../client/follow';
import { askApproval, type Ask } from './approvals';
import { agentResolved, noWorkerNotice, workerPolls } from '../preflight';
import type { TurnReply } from '../../runtime';
import type { PatchloopClient, SessionHandle } from '../../client/patchloop-client';

export const CHAT_SYNTAX = {
  usage: 'patchloop chat <agent> [--id SESSION_ID]',
  summary:
    'An interactive chat on a long-lived chatSession. With --id it reconnects to that session (or starts it). /quit leaves it running, /close ends it, Ctrl-C aborts a turn.',
  options: { id: { type: 'string' } },
  positionals: ['agent'],
} as const;

/**
 * An interactive chat on a `chatSession` workflow. With --id it reconnects to that session (or starts
 * it). Ctrl-C during a turn aborts the turn only; /quit leaves the session running; /close ends it.
 */
export async function chatCommand(
  client: PatchloopClient,
  args: string[],
  print: (line: string) => void,
): Promise<undefined> {
  const { values, positionals } = parseCommand(args, CHAT_SYNTAX);
  const agent = positionals['agent']!;
  const session = await openSession(client, agent, values.id ?? `session-${randomUUID()}`);
  const status = await session.status().catch(() => undefined);
  print(
    `session ${session.workflowId} (agent ${agent}${status ? `, ${String(status['turns' as keyof typeof status] ?? 0)} turns so far` : ''}). /quit leaves it running, /close ends it, Ctrl-C aborts a turn.`,
  );
  const terminal = process.stdin.isTTY === true;
  const input = createInterface({ input: process.stdin, output: process.stdout, terminal });
  let turnRunning = false;
  input.on('SIGINT', () => {
    if (turnRunning) void session.abort('interrupted from chat');
    else input.close();
  });
  const prompt = () => process.stdin.isTTY && process.stdout.write('you> ');
  prompt();
  for await (const line of input) {
    const text = line.trim();
    if (text === '') {
      prompt();
      continue;
    }
    if (text === '/quit') break;
    if (text === '/close') {
      await session.close();
      print('session closed');
      break;
    }
    turnRunning = true;
    const ask = terminal
      ? (question: string) => new Promise<string>((resolve) => input.question(question, resolve))
      : undefined;
    const reply = await sendFollowing(session, text, print, ask);
    turnRunning = false;
    print(replyLine(reply));
    prompt();
  }
  input.close();
  return undefined;
}

function replyLine(reply: TurnReply): string {
  if (reply.status === 'completed') return `assistant> ${reply.reply}`;
  if (reply.status === 'failed')
    return `assistant> (turn failed, nothing of it was kept: ${reply.error?.message ?? 'unknown error'})`;
  return `assistant> (turn aborted${reply.abort_reason ? `: ${reply.abort_reason}` : ''})`;
}

async function openSession(client: PatchloopClient, agent: string, sessionId: string): Promise<SessionHandle> {
  const polled = await workerPolls(client);
  if (!polled) process.stderr.write(`note: ${noWorkerNotice(client)}\n`);
  let session: SessionHandle;
  try {
    session = await client.startSession({ agent }, { sessionId });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    session = client.session(sessionId);
  }
  // An unknown agent ends the chat here, naming the agents the worker serves.
  if (polled) await agentResolved(session);
  return session;
}

/** Sends and prints the turn's tool calls as they start and end; at a terminal, asks for approvals. */
async function sendFollowing(session: SessionHandle, text: string, print: (line: string) => void, ask?: Ask) {
  let seen = (await session.status()).events.at(-1)?.seq ?? 0;
  let done = false;
  const reply = session.send(text).finally(() => (done = true));
  while (!done) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const status = await session.status(seen).catch(() => undefined);
    for (const event of status?.events ?? []) {
      seen = event.seq;
      if (event.event_type.startsWith('tool_call') || event.event_type.startsWith('approval_')) {
        const line = describeEvent(event);
        if (line) print(line.trim());
      }
      if (ask) await askApproval(session, event, ask, print);
    }
  }
  return reply;
}
