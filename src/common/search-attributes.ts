import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The search attributes every patchloop run keeps current, so the Temporal UI's list and
 * `temporal workflow list --query` tell the story: which agent, how it stands, how far it got. Never
 * user text. A worker registers them on the namespace when they are missing.
 */
export const PATCHLOOP_SEARCH_ATTRIBUTES = {
  agent: defineSearchAttributeKey('PatchloopAgent', SearchAttributeType.KEYWORD),
  /** running, awaiting_approval, awaiting_budget, completed, aborted, budget_exhausted, failed. */
  status: defineSearchAttributeKey('PatchloopStatus', SearchAttributeType.KEYWORD),
  iterations: defineSearchAttributeKey('PatchloopIterations', SearchAttributeType.INT),
  toolCalls: defineSearchAttributeKey('PatchloopToolCalls', SearchAttributeType.INT),
  totalTokens: defineSearchAttributeKey('PatchloopTotalTokens', SearchAttributeType.INT),
} as const;
