import type { Message as AguiMessage } from '@ag-ui/core';
import type { Message } from '../../context';

/** A message's content as text: a string as it is, parts by their text. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { type?: unknown; text?: unknown }) =>
      part.type === 'text' && typeof part.text === 'string' ? part.text : '',
    )
    .join('');
}

/** A tool result as the live stream tells it: a JSON string result as its text, anything else as it is. */
function resultText(content: unknown): string {
  const text = textOf(content);
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'string' ? parsed : text;
  } catch {
    return text;
  }
}

/**
 * A session's transcript as AG-UI messages (a `MESSAGES_SNAPSHOT` for a reader that connects without
 * its own: after a page reload): the users' messages, the assistant's with their tool calls, the tools'
 * results; system messages stay out (the agent's instructions are its own). Ids are the messages'
 * places in the transcript.
 */
export function aguiMessagesOf(transcript: readonly Message[]): AguiMessage[] {
  return transcript.flatMap((message, index): AguiMessage[] => {
    const id = `patchloop-transcript-${index}`;
    if (message['role'] === 'user') return [{ id, role: 'user', content: textOf(message['content']) }];
    if (message['role'] === 'tool')
      return [
        { id, role: 'tool', toolCallId: String(message['tool_call_id']), content: resultText(message['content']) },
      ];
    if (message['role'] !== 'assistant') return [];
    const calls = (message['tool_calls'] ?? []) as Array<{ id: string; function: { name: string; arguments: string } }>;
    const content = textOf(message['content']);
    return [
      {
        id,
        role: 'assistant',
        ...(content !== '' ? { content } : {}),
        ...(calls.length > 0
          ? {
              toolCalls: calls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.function.name, arguments: call.function.arguments },
              })),
            }
          : {}),
      },
    ];
  });
}

/**
 * The conversation before the turn in progress: the transcript without what the turn added. The turn's
 * user message joins the transcript at its first model call (`committed`): from then on the transcript
 * is cut after its last user message, and before that the message is added from its event.
 */
export function beforeTurnInProgress(
  transcript: readonly Message[],
  turn: { committed: boolean; message: string | undefined },
): Message[] {
  if (!turn.committed)
    return [...transcript, ...(turn.message !== undefined ? [{ role: 'user', content: turn.message }] : [])];
  const last = transcript.findLastIndex((message) => message['role'] === 'user');
  return transcript.slice(0, last + 1);
}
