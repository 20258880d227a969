import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The search attributes every patchloop run keeps current, so the Temporal UI's list and
 * `temporal workflow list --query` tell the story: which agent, how it stands, how far it got. Never
 * user text. A worker registers them on the namespace when they are missing.
 */
export const PATCHLOOP_SEARCH_ATTRIBUTES = {
  agent: defineSearchAttributeKey('PatchloopAgent', SearchAttributeType.KEYWORD),
  /** running, awaiting_approval, awaiting_budget, waiting, completed, aborted, budget_exhausted, failed. */
  status: defineSearchAttributeKey('PatchloopStatus', SearchAttributeType.KEYWORD),
  iterations: defineSearchAttributeKey('PatchloopIterations', SearchAttributeType.INT),
  toolCalls: defineSearchAttributeKey('PatchloopToolCalls', SearchAttributeType.INT),
  totalTokens: defineSearchAttributeKey('PatchloopTotalTokens', SearchAttributeType.INT),
  /** The Temporal schedule id (`<task queue>:<name>`) of the schedule whose fire started the run. */
  schedule: defineSearchAttributeKey('PatchloopSchedule', SearchAttributeType.KEYWORD),
  /** The principal (API key holder) that started the run through the gateway (docs/gateway.md). */
  principal: defineSearchAttributeKey('PatchloopPrincipal', SearchAttributeType.KEYWORD),
  /** The workflow id of the run a fork was forked from (`patchloop fork`, docs/fork-and-evals.md). */
  forkOf: defineSearchAttributeKey('PatchloopForkOf', SearchAttributeType.KEYWORD),
} as const;

/**
 * A failure's details may say whether the worker found these attributes on the namespace: a run whose
 * agent could not be resolved learns from it that it may still show as failed (`search_attributes`).
 */
export interface SearchAttributesFact {
  search_attributes: boolean;
}

/** Whether a failure (or the activity failure that wraps it) says the namespace has the attributes. */
export function searchAttributesIn(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  const details = (cause as { details?: unknown } | null)?.details;
  return (
    Array.isArray(details) &&
    details.some((detail) => (detail as Partial<SearchAttributesFact> | null)?.search_attributes === true)
  );
}
