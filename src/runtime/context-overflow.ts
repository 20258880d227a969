/**
 * What a provider's "context too long" answer says about the sizes involved, read from its message.
 * Providers word it differently (OpenAI and vLLM: "maximum context length is N tokens ... resulted in M
 * tokens"; Anthropic: "prompt is too long: M tokens > N maximum"; llama.cpp's Python server: "Requested
 * tokens (M) exceed context window of N"). What cannot be read is left out: the run then plans from its
 * own estimate.
 */
export interface ContextOverflow {
  /** The model's window as the provider stated it. */
  window_tokens?: number;
  /** The size of the refused request's prompt as the provider counted it. */
  request_tokens?: number;
}

const PATTERNS: Array<{ pattern: RegExp; window: number; request: number }> = [
  {
    pattern: /maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens/is,
    window: 1,
    request: 2,
  },
  { pattern: /prompt is too long:\s*(\d+) tokens\s*>\s*(\d+)/i, window: 2, request: 1 },
  { pattern: /requested tokens \((\d+)\) exceed context window of (\d+)/i, window: 2, request: 1 },
];

export function parseContextOverflow(message: string): ContextOverflow {
  // "(4000 in the messages, 1000 in the completion)": the prompt alone is what measures the request.
  const prompt = /(\d+) in the messages/i.exec(message);
  for (const { pattern, window, request } of PATTERNS) {
    const match = pattern.exec(message);
    if (match) return { window_tokens: Number(match[window]), request_tokens: Number(prompt?.[1] ?? match[request]) };
  }
  const only =
    /maximum context length is (\d+)/i.exec(message) ?? /context (?:window|size|length) of (\d+)/i.exec(message);
  return only ? { window_tokens: Number(only[1]) } : {};
}

/** Whether a provider's message (beside its code) says the request is longer than the model's context. */
export function saysContextTooLong(message: string): boolean {
  return /context length|maximum context|context window|context size|prompt is too long/i.test(message);
}
