/** One scripted answer of the fake model to one chat-completions request. */
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
  /** Pause before the first chunk and between chunks (streaming only). */
  firstChunkDelayMs?: number;
  chunkDelayMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

export interface FakeError {
  kind: 'error';
  status: number;
  message?: string;
  code?: string;
  headers?: Record<string, string>;
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

export const reply = (content: string | string[], options: Omit<FakeReply, 'kind' | 'content'> = {}): FakeReply => ({ kind: 'reply', content, ...options });
export const callTools = (toolCalls: FakeToolCall[], options: Omit<FakeReply, 'kind' | 'toolCalls'> = {}): FakeReply => ({ kind: 'reply', toolCalls, ...options });
export const failWith = (status: number, options: Omit<FakeError, 'kind' | 'status'> = {}): FakeError => ({ kind: 'error', status, ...options });
