import type { JsonValue, ToolCall } from '../context';
import type { TokenUsage } from '../runtime';

/** A provider's complete answer to one call, whatever its wire format. */
export interface Reply {
  /** The reply's text; a refusal's text when the model refused. */
  content: string;
  toolCalls: ToolCall[];
  reasoningDetails: JsonValue[];
  usage: TokenUsage | null;
  finishReason: string | null;
  streamed: boolean;
}

/** How a request goes out: its abort signal and (when the workflow's text is sent as it is) the body. */
export type SendOptions = { signal: AbortSignal; body?: string; headers?: Record<string, string> };
