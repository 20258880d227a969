import { ContextError } from './errors';
import type { Message } from './messages';
import { isTruthy } from './python-truthiness';

/**
 * Structural validity of tool-call linkage (spec 3.5): between an assistant tool-call message and the
 * last of its results, only tool messages may stand, and every call id must be answered. `from`: the
 * messages before it are a transcript that passed this check (none of its calls is left open), so the
 * check goes on from there.
 */
export function validateToolLinkage(messages: readonly Message[], from = 0): void {
  const pending: string[] = [];
  for (let index = from; index < messages.length; index += 1) {
    const message = messages[index]!;
    const role = message['role'];
    if (role === 'assistant') {
      const toolCalls = message['tool_calls'];
      if (pending.length > 0 && !isTruthy(toolCalls)) {
        throw new ContextError('linkage', `Missing tool results before next assistant message (index ${index})`);
      }
      if (Array.isArray(toolCalls)) {
        for (const call of toolCalls) {
          const id = call !== null && typeof call === 'object' && !Array.isArray(call) ? call['id'] : undefined;
          if (typeof id === 'string' && id !== '') pending.push(id);
        }
      }
      continue;
    }
    if (role === 'tool') {
      if (pending.length === 0) {
        throw new ContextError(
          'linkage',
          `Tool message appears without preceding assistant tool_calls (index ${index})`,
        );
      }
      const position = pending.indexOf(message['tool_call_id'] as string);
      if (position < 0) {
        throw new ContextError('linkage', `tool_call_id does not match pending assistant tool_calls (index ${index})`);
      }
      pending.splice(position, 1);
      continue;
    }
    if (pending.length > 0) {
      throw new ContextError(
        'linkage',
        `Pending assistant tool_calls must be followed by matching tool messages before role '${pythonRoleName(role)}' (index ${index})`,
      );
    }
  }
  if (pending.length > 0) throw new ContextError('linkage', 'Unmatched assistant tool_calls without tool results');
}

/** The reference formats the role with Python's `str()`: a missing role prints `None`. */
function pythonRoleName(role: unknown): string {
  if (role === undefined || role === null) return 'None';
  if (typeof role === 'string') return role;
  if (typeof role === 'boolean') return role ? 'True' : 'False';
  return typeof role === 'number' ? String(role) : JSON.stringify(role);
}
