import { createHash } from 'node:crypto';
import { contentToText, type Message as AguiMessage, type RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import type { ChatSessionInputWire } from '../../runtime';

type HistoryMessage = NonNullable<ChatSessionInputWire['history']>[number];

/** A request the endpoint refuses before anything happens: its message says what is wrong. */
export class ThreadInputRefused extends Error {
  override readonly name = 'ThreadInputRefused';
}

/** The body of `POST /ag-ui/AGENT`, checked against the protocol's own schema. */
export function runAgentInputOf(body: unknown): RunAgentInput {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new ThreadInputRefused(`${issue.path.join('.') || 'the body'}: ${issue.message}`);
}

/**
 * The session a thread is: one per principal, agent and `threadId`, so the same thread continues the
 * same conversation from any gateway, and no other principal's thread of the same name reaches it.
 */
export function threadSessionId(principal: string, agent: string, threadId: string): string {
  const digest = createHash('sha256').update(`${principal}\n${agent}\n${threadId}`).digest('hex');
  return `agui-${digest.slice(0, 40)}`;
}

/** The new message of a run: the input's last message, which must be the user's, as text. */
export function newUserText(input: RunAgentInput): string {
  const last = input.messages.at(-1);
  if (last?.role !== 'user')
    throw new ThreadInputRefused(
      `the last message must be the user's (it is ${last ? `a ${last.role} message` : 'missing'}); a run that answers interrupts sends "resume"`,
    );
  const text = contentToText(last.content);
  if (text.trim() === '') throw new ThreadInputRefused('the user message has no text');
  return text;
}

/**
 * What a new thread starts from: the input's messages before the new one, as text (the users' and the
 * assistant's words; tool calls, their results and system messages stay with the client, since the
 * agent brings its own instructions and tools). A thread that exists keeps its own conversation.
 */
export function threadHistory(input: RunAgentInput): HistoryMessage[] {
  return input.messages.slice(0, -1).flatMap((message: AguiMessage): HistoryMessage[] => {
    if (message.role === 'user') return [{ role: 'user', content: contentToText(message.content) }];
    if (message.role === 'assistant' && typeof message.content === 'string' && message.content !== '')
      return [{ role: 'assistant', content: message.content }];
    return [];
  });
}
