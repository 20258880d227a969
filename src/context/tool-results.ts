import type { JsonValue } from './json';

/**
 * What a tool's return value becomes in the transcript (spec 7.6): strings as JSON string literals,
 * other JSON values with 2-space indentation, anything else as the string literal of its text form.
 */
export function serializeToolResult(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  try {
    const text = JSON.stringify(value, null, 2) as string | undefined;
    if (text !== undefined) return text;
  } catch {
    // Cycles and BigInt values fall through to their text form.
  }
  return JSON.stringify(String(value));
}

/** A failure inside a call: reported to the model like a result (spec 7.6). */
export function toolFailureContent(toolName: string, argumentText: string, message: string): string {
  return JSON.stringify(
    {
      error: `Tool '${toolName}' failed during execution or result parsing with arguments ${argumentText}: ${message}`,
    },
    null,
    2,
  );
}

export function unknownToolContent(toolName: string): string {
  return JSON.stringify({ error: `Tool '${toolName}' was not found` }, null, 2);
}

/** The step produced no result at all (timeout, retries exhausted): compact, with the reference's separators. */
export function toolStepErrorContent(message: string): string {
  return `{"error": ${JSON.stringify(message)}}`;
}

/** `tool_call_end.result`: the content parsed as JSON, or the raw content. */
export function resultForEvents(content: string): JsonValue {
  try {
    return JSON.parse(content) as JsonValue;
  } catch {
    return content;
  }
}
