import { z } from 'zod';
import { JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';

/** Input of the `approve` update: one decision on one gated tool call. */
export const ApprovalDecision = sharedSchema('runtime/approvals#ApprovalDecision', () =>
  z.strictObject({
    tool_call_id: z.string().min(1),
    approved: z.boolean(),
    reason: z.string().max(4000).optional(),
  }),
);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;

/** What the `approve` update returns. */
export interface ApprovalAccepted {
  tool_call_id: string;
  approved: boolean;
}

/** A gated tool call waiting for a person, as `status` lists it. */
export const PendingApproval = sharedSchema('runtime/approvals#PendingApproval', () =>
  z.strictObject({
    tool_call_id: z.string(),
    tool_name: z.string(),
    /** The repaired, validated arguments the tool will run with when approved. */
    arguments: JsonObject,
    /** ISO time the request was made (workflow time, stable under replay). */
    requested_at: z.string(),
  }),
);
export type PendingApproval = z.infer<typeof PendingApproval>;

/** An approval request of the batch in flight, decided or not. */
export const ApprovalRecord = sharedSchema('runtime/approvals#ApprovalRecord', () =>
  PendingApproval.extend({
    /** The call's position in its batch (ids may repeat within one); absent: the first call with the id. */
    call_index: z.number().int().nonnegative().optional(),
    decision: z
      .strictObject({
        approved: z.boolean(),
        reason: z.string().optional(),
        by: z.enum(['update', 'timeout']),
      })
      .optional(),
  }),
);
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/** Input of the `reviewToolCalls` activity: the calls of a batch whose tool may need approval. */
export const ToolReviewInput = sharedSchema('runtime/approvals#ToolReviewInput', () =>
  z.strictObject({
    agent: z.string(),
    iteration: z.number().int().nonnegative(),
    calls: z.array(z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() })),
    run_chain_id: z.string(),
  }),
);
export type ToolReviewInput = z.infer<typeof ToolReviewInput>;

/**
 * Per reviewed call, in order: whether a person must decide it, and its repaired and validated
 * arguments. A call whose arguments fail validation needs no approval: it fails as an argument error.
 */
export const ToolReview = sharedSchema('runtime/approvals#ToolReview', () =>
  z.strictObject({
    tool_call_id: z.string(),
    needs_approval: z.boolean(),
    arguments: JsonObject.nullable(),
  }),
);
export type ToolReview = z.infer<typeof ToolReview>;

export const APPROVAL_TIMED_OUT = 'approval timed out';

/** The result the model sees for a call a person rejected (the same shape as a cancellation marker). */
export function rejectedCallContent(toolName: string, reason: string | undefined): string {
  const why = reason !== undefined && reason.trim() !== '' ? ` Reason: ${reason}` : '';
  return `<Tool call rejected by the approver. Tool: ${toolName}.${why}>`;
}

/** Why a decision is refused before anything is recorded, or null when it may be recorded. */
export function decisionRefusal(
  records: readonly ApprovalRecord[],
  payload: unknown,
): { refusal: string } | { decision: ApprovalDecision } {
  const parsed = ApprovalDecision.safeParse(payload);
  if (!parsed.success)
    return {
      refusal: `expected {"tool_call_id": string, "approved": boolean, "reason"?: string}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    };
  const decision = parsed.data;
  // A repeated id is decided as one: every gated call that carries it.
  const matching = records.filter((entry) => entry.tool_call_id === decision.tool_call_id);
  const record = matching.find((entry) => !entry.decision) ?? matching[0];
  if (!record) {
    const waiting = records.filter((entry) => !entry.decision).map((entry) => entry.tool_call_id);
    return {
      refusal: `no tool call '${decision.tool_call_id}' awaits approval${waiting.length > 0 ? ` (waiting: ${waiting.join(', ')})` : ' (none waits)'}`,
    };
  }
  if (record.decision)
    return {
      refusal: `tool call '${decision.tool_call_id}' was already ${record.decision.approved ? 'approved' : 'rejected'}`,
    };
  return { decision };
}
