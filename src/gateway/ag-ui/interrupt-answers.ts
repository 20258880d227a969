import type { ResumeEntry } from '@ag-ui/core';
import { ApprovalRefusedError, type RunHandle } from '../../client/patchloop-client';
import type { PendingApproval, RunEvent } from '../../runtime';
import { ThreadInputRefused } from './thread-input';
import { turnStartOf } from './turn-stream';

/** A resume entry's answer to an approval, as a decision. */
function decisionOf(entry: ResumeEntry): { approved: boolean; reason?: string } {
  if (entry.status === 'cancelled') return { approved: false, reason: 'the user cancelled the question' };
  const payload = entry.payload as { approved?: unknown; reason?: unknown } | boolean | undefined;
  if (typeof payload === 'boolean') return { approved: payload };
  if (typeof payload?.approved !== 'boolean' || (payload.reason !== undefined && typeof payload.reason !== 'string'))
    throw new ThreadInputRefused(
      `resume ${entry.interruptId}: the payload must be {"approved": boolean, "reason"?: string} (or a boolean)`,
    );
  return { approved: payload.approved, ...(payload.reason !== undefined ? { reason: payload.reason as string } : {}) };
}

/**
 * Answers a thread's interrupts (tool approvals) from a run's `resume` entries: each entry names an
 * approval request of the session (its id is the tool call's) and decides it. Every entry is checked
 * before any decision is made, so a bad one changes nothing; a call decided meanwhile (elsewhere, or
 * by its timeout) is left as it was. Answers the `seq` of the last request answered: the resumed run
 * goes on from that interrupt.
 */
export async function answerInterrupts(
  handle: RunHandle,
  entries: readonly ResumeEntry[],
  events: readonly RunEvent[],
  pending: readonly PendingApproval[],
): Promise<number> {
  // The turn in progress's requests only: an interrupt of an earlier turn is no longer one.
  const turnStart = turnStartOf(events, Number.MAX_SAFE_INTEGER);
  const requested = new Map<string, number>();
  for (const event of events)
    if (event.event_type === 'approval_requested' && event.seq > turnStart)
      requested.set(event.tool_call_id, event.seq);
  const decisions = entries.map((entry) => {
    const seq = requested.get(entry.interruptId);
    if (seq === undefined) throw new ThreadInputRefused(`resume: this thread has no interrupt ${entry.interruptId}`);
    return { entry, seq, decision: decisionOf(entry) };
  });
  for (const { entry, decision } of decisions) {
    const waiting = pending.find((one) => one.tool_call_id === entry.interruptId);
    if (!waiting) continue;
    const decide = decision.approved
      ? handle.approve(entry.interruptId, decision.reason, waiting.workflow_id)
      : handle.reject(entry.interruptId, decision.reason ?? 'rejected by the user', waiting.workflow_id);
    await decide.catch((error: unknown) => {
      if (!(error instanceof ApprovalRefusedError)) throw error;
    });
  }
  return Math.max(...decisions.map(({ seq }) => seq));
}
