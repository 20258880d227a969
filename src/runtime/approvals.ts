import { z } from 'zod';
import { JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';
import { ToolCallRequest } from './phases';

/** Input of the `approve` update: one decision on one gated tool call. */
export const ApprovalDecision = sharedSchema('runtime/approvals#ApprovalDecision', () =>
  z.strictObject({
    tool_call_id: z.string().min(1),
    approved: z.boolean(),
    reason: z.string().max(4000).optional(),
    /**
     * The run whose call this is, when a sub-agent's call waits (its `workflow_id` in `pending_approvals`):
     * the decision goes down the tree to it. Absent: the run's own call, else the one sub-agent call with the id.
     */
    workflow_id: z.string().min(1).optional(),
  }),
);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;

/** What the `approve` update returns. */
export interface ApprovalAccepted {
  tool_call_id: string;
  approved: boolean;
  /** The sub-agent run the decision went to (absent: the run's own call). */
  workflow_id?: string;
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
    /** A sub-agent's call (at any depth): the run it belongs to, and its agent. Absent: the run's own. */
    workflow_id: z.string().optional(),
    agent: z.string().optional(),
  }),
);
export type PendingApproval = z.infer<typeof PendingApproval>;

/** The most entries, and argument bytes per entry, a run passes up to its caller (a signal stays small). */
const RELAYED_PENDING = { maxEntries: 100, maxArgumentBytes: 4096 };

/**
 * The waiting calls a sub-agent run reports to its caller, bounded: at most `maxEntries`, and arguments
 * larger than `maxArgumentBytes` as their start (`_truncated`) and size (`_bytes`). The run's own
 * `pendingApprovals` still has them whole.
 */
export function relayedPending(pending: readonly PendingApproval[]): PendingApproval[] {
  return pending.slice(0, RELAYED_PENDING.maxEntries).map((entry) => {
    const text = JSON.stringify(entry.arguments);
    const bytes = new TextEncoder().encode(text).length;
    return bytes <= RELAYED_PENDING.maxArgumentBytes
      ? entry
      : { ...entry, arguments: { _truncated: `${text.slice(0, 1000)}...`, _bytes: bytes } };
  });
}

/** Signal `child_approvals`: a sub-agent run's calls (its own and its sub-agents') waiting for decisions now. */
export const ChildApprovals = sharedSchema('runtime/approvals#ChildApprovals', () =>
  z.strictObject({
    child_workflow_id: z.string().min(1),
    pending: z.array(PendingApproval),
  }),
);
export type ChildApprovals = z.infer<typeof ChildApprovals>;

/** An approval request of the batch in flight, decided or not. */
export const ApprovalRecord = sharedSchema('runtime/approvals#ApprovalRecord', () =>
  PendingApproval.extend({
    /** The call's position in its batch (ids may repeat within one); absent: the first call with the id. */
    call_index: z.number().int().nonnegative().optional(),
    decision: z
      .strictObject({
        approved: z.boolean(),
        reason: z.string().optional(),
        by: z.enum(['update', 'timeout', 'policy', 'guardrail']),
      })
      .optional(),
  }),
);
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/**
 * Input of the `reviewToolCalls` activity: the calls of a batch whose tool may need approval, each the
 * batch's own `ToolCallRequest`.
 */
export const ToolReviewInput = sharedSchema('runtime/approvals#ToolReviewInput', () =>
  z.strictObject({
    agent: z.string(),
    iteration: z.number().int().nonnegative(),
    calls: z.array(ToolCallRequest),
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

/** Whether a gated call still waits for a person: the one test of an undecided approval. */
export function isUndecided(record: ApprovalRecord): boolean {
  return !record.decision;
}

/** The gated calls that still wait for a person, in their batch's order. */
export function undecidedRecords(records: readonly ApprovalRecord[]): ApprovalRecord[] {
  return records.filter(isUndecided);
}

export const APPROVAL_TIMED_OUT = 'approval timed out';

/** The result the model sees for a call a person rejected (the same shape as a cancellation marker). */
export function rejectedCallContent(toolName: string, reason: string | undefined, by?: string): string {
  const why = reason !== undefined && reason.trim() !== '' ? ` Reason: ${reason}` : '';
  const who =
    by === 'policy'
      ? 'denied by the tool policy'
      : by === 'guardrail'
        ? 'blocked by a guardrail'
        : 'rejected by the approver';
  return `<Tool call ${who}. Tool: ${toolName}.${why}>`;
}

/**
 * Where a decision goes: to one of the run's own calls (`own`), down to the sub-agent run whose subtree
 * waits for it (`child`: the run's direct child to send it to), or refused with the reason.
 * `children`: what each running sub-agent reported waiting, by the child's workflow id.
 */
export function routeDecision(
  self: string,
  records: readonly ApprovalRecord[],
  children: ReadonlyMap<string, readonly PendingApproval[]>,
  payload: unknown,
): { refusal: string } | { own: ApprovalDecision } | { child: string; decision: ApprovalDecision } {
  const parsed = ApprovalDecision.safeParse(payload);
  if (!parsed.success)
    return {
      refusal: `expected {"tool_call_id": string, "approved": boolean, "reason"?: string, "workflow_id"?: string}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    };
  const decision = parsed.data;
  const target = decision.workflow_id;
  const own = () => {
    const checked = decisionRefusal(records, decision);
    return 'refusal' in checked ? checked : { own: checked.decision };
  };
  // An own call that waits; a decided one does not hide a sub-agent's call with the same id.
  const ownCall = records.some((record) => record.tool_call_id === decision.tool_call_id && isUndecided(record));
  if (target === self || (target === undefined && ownCall)) return own();
  const below = [...children].flatMap(([child, pending]) =>
    pending
      .filter(
        (entry) =>
          entry.tool_call_id === decision.tool_call_id && (target === undefined || entry.workflow_id === target),
      )
      .map((entry) => ({ child, entry })),
  );
  const runs = [...new Set(below.map((found) => found.entry.workflow_id))];
  if (runs.length === 1) return { child: below[0]!.child, decision: { ...decision, workflow_id: runs[0]! } };
  if (runs.length > 1)
    return {
      refusal: `tool call '${decision.tool_call_id}' waits in several sub-agent runs: name one as workflow_id (${runs.join(', ')})`,
    };
  if (target !== undefined && target !== self)
    return { refusal: `no tool call '${decision.tool_call_id}' of run ${target} awaits approval here` };
  const checked = own();
  const waitingBelow = [...children.values()].flat().map((entry) => `${entry.tool_call_id} (run ${entry.workflow_id})`);
  if (
    'refusal' in checked &&
    waitingBelow.length > 0 &&
    !records.some((record) => record.tool_call_id === decision.tool_call_id)
  ) {
    const waiting = [...undecidedRecords(records).map((record) => record.tool_call_id), ...waitingBelow];
    return { refusal: `no tool call '${decision.tool_call_id}' awaits approval (waiting: ${waiting.join(', ')})` };
  }
  return checked;
}

/** Why a decision is refused before anything is recorded, or null when it may be recorded. */
export function decisionRefusal(
  records: readonly ApprovalRecord[],
  payload: unknown,
): { refusal: string } | { decision: ApprovalDecision } {
  const parsed = ApprovalDecision.safeParse(payload);
  if (!parsed.success)
    return {
      refusal: `expected {"tool_call_id": string, "approved": boolean, "reason"?: string, "workflow_id"?: string}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    };
  const decision = parsed.data;
  // A repeated id is decided as one: every gated call that carries it.
  const matching = records.filter((entry) => entry.tool_call_id === decision.tool_call_id);
  const record = matching.find(isUndecided) ?? matching[0];
  if (!record) {
    const waiting = undecidedRecords(records).map((entry) => entry.tool_call_id);
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
