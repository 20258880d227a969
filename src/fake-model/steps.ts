/** One scripted answer of the fake model to one request (Chat Completions or the Responses API). */
export type FakeStep = FakeReply | FakeError | FakeDrop | FakeHang;

export interface FakeToolCall {
  id: string;
  name: string;
  /** Raw argument text, sent as given (it may be malformed on purpose). */
  arguments: string;
}

export interface FakeReply {
  kind: 'reply';
  /** Streamed as these chunks; a string is sent in one chunk. */
  content?: string | string[];
  toolCalls?: FakeToolCall[];
  /** Pause before the first chunk (a plain reply: before answering) and between chunks (streaming). */
  firstChunkDelayMs?: number;
  chunkDelayMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /**
   * Reasoning items before the reply's output (Responses API only; a chat reply leaves them out), sent
   * as `{id, type: 'reasoning', summary: [{type: 'summary_text', text}], encrypted_content}`.
   */
  reasoning?: FakeReasoning[];
  /** Break this reply the way real providers and networks do (see `ReplyFault`). */
  fault?: ReplyFault;
}

export interface FakeReasoning {
  id: string;
  summary?: string[];
  encrypted_content?: string;
}

/**
 * How a reply breaks. `reset`: the TCP connection is reset (RST) after `afterBytes` bytes of the
 * response body, or (streaming) after `afterChunks` whole events and half of the next. `eof`: the server closes cleanly but leaves out the finish reason, the `[DONE]` line or
 * both (plain replies: no `finish_reason`); on the Responses API, `finish_reason` or `both` leaves out
 * `response.completed` (plain replies: the status is `in_progress`). `junk`: a data line that is not JSON after `afterChunks`
 * chunks. `no_choices`: a plain reply without `choices`.
 */
export type ReplyFault =
  | { kind: 'reset'; afterBytes?: number; afterChunks?: number }
  | { kind: 'eof'; omit: 'finish_reason' | 'done' | 'both' }
  | { kind: 'junk'; afterChunks: number; line?: string }
  | { kind: 'no_choices' };

export interface FakeError {
  kind: 'error';
  status: number;
  /**
   * The body exactly as sent, instead of OpenAI's `{"error": {"message", "type", "code"}}` (FastAPI's
   * `{"detail": ...}`, plain text, an HTML page): a string, or one made for each request from its number
   * at this server (from 1), a new request id in every answer, say.
   */
  body?: string | ((request: number) => string);
  /** The body's content type (default `application/json`). */
  contentType?: string;
  message?: string;
  code?: string;
  /** The OpenAI error `type` field (e.g. `insufficient_quota`). */
  type?: string;
  headers?: Record<string, string>;
  /** Append the request's bearer token to the message, as providers do in 401 bodies. */
  echoKey?: boolean;
  /** Pause before answering. */
  delayMs?: number;
}

/** Sends these content chunks, then destroys the connection mid-stream. */
export interface FakeDrop {
  kind: 'drop';
  chunks: string[];
  chunkDelayMs?: number;
}

/** Sends these content chunks, then never finishes until the client goes away. */
export interface FakeHang {
  kind: 'hang';
  chunks?: string[];
  chunkDelayMs?: number;
}

export const reply = (content: string | string[], options: Omit<FakeReply, 'kind' | 'content'> = {}): FakeReply => ({
  kind: 'reply',
  content,
  ...options,
});
export const callTools = (
  toolCalls: FakeToolCall[],
  options: Omit<FakeReply, 'kind' | 'toolCalls'> = {},
): FakeReply => ({ kind: 'reply', toolCalls, ...options });
/** One tool call of a scripted reply, its arguments written as the model would (JSON text). */
export const toolCall = (id: string, name: string, args: Record<string, unknown> = {}): FakeToolCall => ({
  id,
  name,
  arguments: JSON.stringify(args),
});
/** A reply's reported usage (`reply(..., withUsage(10, 5))`): prompt and completion tokens, and their sum. */
export const withUsage = (prompt: number, completion: number) => ({
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});
export const failWith = (status: number, options: Omit<FakeError, 'kind' | 'status'> = {}): FakeError => ({
  kind: 'error',
  status,
  ...options,
});
