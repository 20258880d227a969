/** What a run accepts as one user message, and how much it lets wait at once. */
export interface MessageLimits {
  maxMessageBytes: number;
  maxQueuedBytes: number;
}

export const DEFAULT_MESSAGE_LIMITS: MessageLimits = { maxMessageBytes: 256 * 1024, maxQueuedBytes: 1024 * 1024 };

export type MessageCheck = { ok: true; content: string; bytes: number } | { ok: false; reason: string };

export function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Checks a `user_message` (or `send`) payload: `{"content": string}`, not empty, within the size limit,
 * and room left in the queue. The reason is shown to whoever sent it; it never repeats the payload.
 */
export function checkUserMessage(payload: unknown, limits: MessageLimits, queuedBytes: number): MessageCheck {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    return { ok: false, reason: 'expected {"content": string}' };
  const content = (payload as { content?: unknown }).content;
  if (typeof content !== 'string')
    return {
      ok: false,
      reason: `expected {"content": string}, got content of type ${content === null ? 'null' : typeof content}`,
    };
  const extra = Object.keys(payload).filter((key) => key !== 'content');
  if (extra.length > 0)
    return {
      ok: false,
      reason: `unknown field(s): ${extra
        .slice(0, 5)
        .map((key) => JSON.stringify(key.slice(0, 40)))
        .join(', ')}`,
    };
  if (content === '') return { ok: false, reason: 'content is empty' };
  const bytes = utf8Bytes(content);
  if (bytes > limits.maxMessageBytes)
    return {
      ok: false,
      reason: `content is ${bytes} bytes; the limit is ${limits.maxMessageBytes} (max_user_message_bytes)`,
    };
  if (queuedBytes + bytes > limits.maxQueuedBytes) {
    return {
      ok: false,
      reason: `${queuedBytes} bytes of messages are already waiting; the queue holds ${limits.maxQueuedBytes} (max_queued_message_bytes): send it again after the run has caught up`,
    };
  }
  return { ok: true, content, bytes };
}
