import type { Mutation } from '../context';

/**
 * The patches an abort leaves (spec 8.3). Activities and the workflow build them without a reason: only
 * the workflow holds it (it came by signal), and fills it in with `withAbortReason` before folding. A
 * call the abort left running that may still take effect carries a `note` saying so, which the marker
 * shows after the reason (`<Tool execution cancelled by user. Tool: pay. Reason: <reason>. <note>>`).
 */
export function cancelledCallMutation(call: { id: string; name: string }, note = ''): Mutation {
  return { type: 'ToolCancelledMutation', tool_call_id: call.id, tool_name: call.name, abort_reason: note };
}

export function truncatedReplyMutation(partialContent: string): Mutation {
  return { type: 'AssistantTruncatedMutation', partial_content: partialContent, abort_reason: '' };
}

/**
 * The abort reason written into every truncation and cancellation of a phase's patches, before the note
 * a cancellation may carry.
 */
export function withAbortReason(mutations: readonly Mutation[], reason: string): Mutation[] {
  return mutations.map((mutation) =>
    mutation.type === 'AssistantTruncatedMutation' || mutation.type === 'ToolCancelledMutation'
      ? { ...mutation, abort_reason: withNote(reason, mutation.abort_reason ?? '') }
      : mutation,
  );
}

function withNote(reason: string, note: string): string {
  if (note === '') return reason;
  return reason === '' ? note : `${reason.replace(/\.$/, '')}. ${note}`;
}
