import type { ChatRequestBody, Responder } from './server';
import type { FakeStep, FakeToolCall } from './steps';

/**
 * The offline demo model: a deterministic stand-in for a provider. It asks for the example tools when
 * the user's words call for them (arithmetic, waiting, repeating) and answers from their results.
 */
export const demoModel: Responder = (body: ChatRequestBody, index: number): FakeStep => {
  const messages = body.messages;
  const last = messages[messages.length - 1];
  const offersTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (last?.['role'] === 'tool') return say(summarizeToolResults(messages));
  const text = typeof last?.['content'] === 'string' ? last['content'] : '';
  const calls = offersTools ? toolCallsFor(text, index) : [];
  if (calls.length > 0) return { kind: 'reply', toolCalls: calls, firstChunkDelayMs: 150 };
  return say(text === '' ? 'Hello! Ask me to add numbers, wait, or repeat a text.' : `You said: ${text}`);
};

function say(text: string): FakeStep {
  // Word by word, so followers see the stream.
  return { kind: 'reply', content: text.split(/(?<= )/), chunkDelayMs: 40 };
}

function toolCallsFor(text: string, index: number): FakeToolCall[] {
  const calls: FakeToolCall[] = [];
  const id = () => `call_${index}_${calls.length + 1}`;
  for (const match of text.matchAll(/(-?\d+(?:\.\d+)?)\s*(?:\+|plus|and)\s*(-?\d+(?:\.\d+)?)/gi)) {
    calls.push({ id: id(), name: 'add', arguments: JSON.stringify({ a: Number(match[1]), b: Number(match[2]) }) });
  }
  const wait = /wait\s+(?:for\s+)?(\d+(?:\.\d+)?)\s*s/i.exec(text);
  if (wait) calls.push({ id: id(), name: 'wait', arguments: JSON.stringify({ seconds: Number(wait[1]) }) });
  const repeat = /repeat\s+['"]([^'"]+)['"]\s+(\d+)\s+times/i.exec(text);
  if (repeat)
    calls.push({ id: id(), name: 'repeat', arguments: JSON.stringify({ text: repeat[1], times: Number(repeat[2]) }) });
  return calls;
}

function summarizeToolResults(messages: ChatRequestBody['messages']): string {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.['role'] === 'tool') start -= 1;
  const request = messages[start - 1] as { tool_calls?: Array<{ id: string; function: { name: string } }> } | undefined;
  const names = new Map((request?.tool_calls ?? []).map((call) => [call.id, call.function.name]));
  const parts = messages
    .slice(start)
    .map((message) => `${names.get(String(message['tool_call_id'])) ?? 'tool'} returned ${String(message['content'])}`);
  return `Done: ${parts.join('; ')}.`;
}
