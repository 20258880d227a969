import type { Message } from '../../context';
import type { AgentRunInputWire } from '../../runtime';
import type { ResponsesInputMessage, ResponsesRequest } from './wire';

/** A request's input the run cannot take, with the field to name in the error. */
export class InputRefused extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

function textOf(message: ResponsesInputMessage): string {
  return typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('');
}

/**
 * The run's `input` and `history` for a request: a string is the user's request; a list's last message
 * (a user's) is the request and the ones before it the history (a developer message is a system one),
 * after the previous response's conversation (`conversationAfter`).
 */
export function runInputOf(
  request: ResponsesRequest,
  earlier: Message[] = [],
): Pick<AgentRunInputWire, 'agent' | 'input' | 'history'> {
  if (typeof request.input === 'string')
    return { agent: request.model, input: request.input, history: earlier.length > 0 ? asHistory(earlier) : null };
  const last = request.input.at(-1)!;
  if (last.role !== 'user')
    throw new InputRefused('input', `the last message of input must be the user's request (it is ${last.role}'s)`);
  const before = request.input.slice(0, -1).map((message) => ({
    role: message.role === 'developer' ? 'system' : message.role,
    content: textOf(message),
  }));
  const history = [...earlier, ...before];
  return { agent: request.model, input: textOf(last), history: history.length > 0 ? asHistory(history) : null };
}

/** Chat-shaped messages, checked by the run before it starts (a wrong one fails it with the reason). */
function asHistory(messages: object[]): AgentRunInputWire['history'] {
  return messages as AgentRunInputWire['history'];
}
