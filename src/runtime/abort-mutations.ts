import type { Mutation } from '../context';

/**
 * The patches an abort leaves (spec 8.3). Activities and the workflow build them without a reason: only
 * the workflow holds it (it came by signal), and fills it in with `withAbortReason` before folding.
 */
export function cancelledCallMutation(call: { id: string; name: string }): Mutation {
  return { type: 'ToolCancelledMutation', tool_call_id: call.id, tool_name: call.name, abort_reason: '' };
}

export function truncatedReplyMutation(partialContent: string): Mutation {
  return { type: 'AssistantTruncatedMutation', partial_content: partialContent, abort_reason: '' };
}

/** The abort reason written into every truncation and cancellation of a phase's patches. */
export function withAbortReason(mutations: readonly Mutation[], reason: string): Mutation[] {
  return mutations.map((mutation) =>
    mutation.type === 'AssistantTruncatedMutation' || mutation.type === 'ToolCancelledMutation'
      ? { ...mutation, abort_reason: reason }
      : mutation,
  );
}
