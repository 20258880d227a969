import type { JsonObject, JsonValue, Message, ToolCall } from '../context';
import type { LlmRequest } from '../runtime';
import { responsesReasoning } from './responses-request';

/**
 * The Responses API's reasoning items of the replies that called tools, kept by this worker so the
 * next request of the tool loop sends them back before the calls they led to (as OpenAI asks of a
 * stateless, `store: false` conversation). The transcript never holds them (spec 2.1 and invariant 8:
 * no message a mutation appends carries `reasoning_details`); the activity's result still reports them.
 *
 * Kept in memory, by workflow id (a run that continued as new keeps its transcript) and the reply's
 * first tool call id, bounded in characters (least recently used go first). A worker that restarted,
 * or another worker, has none: the request then goes without them, which the API accepts (the model
 * reasons again).
 */
export class ReasoningMemory {
  private readonly entries = new Map<string, { items: JsonObject[]; chars: number }>();
  private chars = 0;
  constructor(private readonly maxChars = 16 * 2 ** 20) {}

  /** A reply of the workflow's: its reasoning items, if it called tools and had any. */
  remember(workflowId: string, toolCalls: readonly ToolCall[], reasoning: readonly JsonValue[]): void {
    const items = responsesReasoning([...reasoning]);
    const first = toolCalls[0];
    if (!first || items.length === 0) return;
    const key = `${workflowId}\n${first.id}`;
    this.forget(key);
    const chars = JSON.stringify(items).length;
    this.entries.set(key, { items, chars });
    this.chars += chars;
    for (const [oldest] of this.entries) {
      if (this.chars <= this.maxChars) break;
      this.forget(oldest);
    }
  }

  /**
   * The request with the remembered reasoning items on the assistant messages that called tools and
   * carry none of their own; the same object when there is nothing to add.
   */
  restore(workflowId: string, request: LlmRequest): LlmRequest {
    let changed = false;
    const messages = request.messages.map((message) => {
      const found = this.recall(workflowId, message);
      if (!found) return message;
      changed = true;
      return { ...message, reasoning_details: found };
    });
    return changed ? { ...request, messages } : request;
  }

  private recall(workflowId: string, message: Message): JsonObject[] | undefined {
    if (message['role'] !== 'assistant' || responsesReasoning(message['reasoning_details']).length > 0)
      return undefined;
    const calls = message['tool_calls'];
    const first = Array.isArray(calls) ? calls[0] : undefined;
    const id = typeof first === 'object' && first !== null && !Array.isArray(first) ? first['id'] : undefined;
    if (typeof id !== 'string') return undefined;
    const key = `${workflowId}\n${id}`;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Used again: the most recent now.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.items;
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.chars -= entry.chars;
  }
}
