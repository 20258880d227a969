import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseCommand } from '../arguments';
import { describeEvent, failedTurnText, TokenFollower } from '../../client/follow';
import { askApproval, type Ask } from './approvals';
import { agentResolved } from '../preflight';
import { closeWatch, note, waitingLine, watchForWorker } from '../worker-watch';
import type { Message } from '../../context';
import type { TurnReply } from '../../runtime';
import type { PatchloopClient, SessionHandle } from '../../client/patchloop-client';
import { CHAT_SYNTAX } from '../syntax';

const write = (text: string) => void process.stdout.write(text);

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
  const turns = Number(status?.['turns' as keyof typeof status] ?? 0);
  print(
    `session ${session.workflowId} (agent ${agent}${status ? `, ${turns} turns so far` : ''}). /quit leaves it running, /close ends it, Ctrl-C aborts a turn.`,
  );
  // Reconnecting: where the conversation stands.
  if (turns > 0) for (const line of recap(await session.transcript().catch(() => []))) print(line);
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
    // A turn that no worker takes says so while it waits.
    const watch = watchForWorker(session, client.taskQueue);
    const { reply, streamed } = await sendFollowing(session, text, print, ask).finally(() => closeWatch(watch));
    turnRunning = false;
    // A reply whose tokens were shown live is not printed again.
    if (streamed) write('\n');
    if (!streamed || reply.status !== 'completed') print(replyLine(reply));
    prompt();
  }
  input.close();
  return undefined;
}

function replyLine(reply: TurnReply): string {
  if (reply.status === 'completed') return `assistant> ${reply.reply}`;
  if (reply.status === 'failed') return `assistant> (turn failed: ${failedTurnText(reply.error)})`;
  return `assistant> (turn aborted${reply.abort_reason ? `: ${reply.abort_reason}` : ''})`;
}

async function openSession(client: PatchloopClient, agent: string, sessionId: string): Promise<SessionHandle> {
  let session: SessionHandle;
  try {
    session = await client.startSession({ agent }, { sessionId });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    session = client.session(sessionId);
  }
  // An unknown agent ends the chat here, naming the agents the worker serves.
  const waiting = await agentResolved(session);
  if (waiting) note(`${waitingLine(waiting, client.taskQueue)}: messages wait until one does`);
  return session;
}

/** The last turns of a session, for a reconnect: up to three exchanges. */
function recap(transcript: Message[]): string[] {
  const spoken = transcript.filter(
    (message) =>
      (message['role'] === 'user' || message['role'] === 'assistant') &&
      typeof message['content'] === 'string' &&
      message['content'] !== '',
  );
  const lines = spoken
    .slice(-6)
    .map((message) => `${message['role'] === 'user' ? 'you' : 'assistant'}> ${String(message['content'])}`);
  return lines.length > 0 ? ['(the last turns)', ...lines] : [];
}

/**
 * Sends, streams the reply's tokens as they come (after `assistant> `), and prints the turn's tool calls
 * as they start and end; at a terminal, asks for approvals.
 */
async function sendFollowing(
  session: SessionHandle,
  text: string,
  print: (line: string) => void,
  ask?: Ask,
): Promise<{ reply: TurnReply; streamed: boolean }> {
  // Unanswered while no worker has taken the session's first task: its log starts at 0 then.
  let seen = (await session.status().catch(() => undefined))?.events.at(-1)?.seq ?? 0;
  let done = false;
  let streamed = false;
  let midLine = false;
  const tokens = new TokenFollower(session, {
    event: () => undefined,
    chunk: (event) => {
      if (event.event_type !== 'llm_chunk_arrive') return;
      if (!midLine) write('assistant> ');
      write(event.chunk);
      streamed = midLine = true;
    },
  });
  const reply = session.send(text).finally(() => (done = true));
  const endLine = () => {
    if (midLine) write('\n');
    midLine = false;
  };
  for (let last = false; !last;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    // One more look after the reply: its last events (and tokens) are read to the end.
    last = done;
    const status = await session.status(seen).catch(() => undefined);
    for (const event of status?.events ?? []) {
      seen = event.seq;
      if (event.event_type === 'llm_call_start' && event.stream) tokens.start(event.llm_call);
      if (event.event_type === 'llm_call_end') await tokens.finish(event.llm_call);
      if (event.event_type.startsWith('tool_call') || event.event_type.startsWith('approval_')) {
        const line = describeEvent(event);
        if (line) {
          endLine();
          // Text streamed before the tools is not the reply: it shows again if it is.
          streamed = false;
          print(line.trim());
        }
      }
      if (ask && event.event_type === 'approval_requested') {
        endLine();
        await askApproval(session, event, ask, print);
      }
    }
  }
  tokens.stop();
  return { reply: await reply, streamed: streamed && midLine };
}
