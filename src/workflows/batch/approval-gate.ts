import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { argumentsForEvents, repairToolArguments } from '../../context';
import {
  APPROVAL_TIMED_OUT,
  decideCall,
  describeSource,
  rejectedCallContent,
  type PolicyVerdict,
  type ApprovalRecord,
  type ToolCallRequest,
  type ToolReview,
  type WorkflowCallResult,
  undecidedRecords,
} from '../../runtime';
import type { LoopContext } from '../loop/loop-context';
import { waitForDecision } from './decision-wait';
import { checksAt, screen } from '../loop/guardrail-checks';
import { emit, type Run } from '../run/run-state';
import { keepVisible } from '../run/visibility';

/** The gate's outcome: the calls people rejected (their results), or an abort while waiting. */
export type GateOutcome = { type: 'decided'; rejected: WorkflowCallResult[] } | { type: 'aborted' };

/**
 * Called while a batch waits for decisions, before each wait: a run may continue as new here (it
 * throws then), carrying the batch and its approval records.
 */
export type ApprovalWaitHook = () => Promise<void>;

/**
 * Human approval of gated tool calls (the agent's `needs_approval`, or the tool's own `needsApproval`).
 * Their arguments are reviewed by an activity (repaired, validated, the predicate run), then nothing of
 * the batch runs until every gated call is decided: the wait is a timer that says so in the Temporal UI
 * (`waitForDecision`), no activity; it times out only with `approval_timeout_seconds`. `resumed`: the
 * records came with continue-as-new.
 */
export async function approvalGate(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  eventIteration: number,
  resumed: boolean,
  onWait?: ApprovalWaitHook,
): Promise<GateOutcome> {
  const run = loop.run;
  if (!resumed) {
    const requestedAt = new Date(Date.now()).toISOString();
    // The agent's policy (and its needs_approval) decides each call, by position: a provider may repeat
    // a call id within one batch. No command at all for a batch it allows whole: runs without approvals
    // replay as before.
    const verdicts = calls.map((call) =>
      decideCall(loop.agent, {
        tool: call.name,
        arguments: call.arguments,
        principal: run.settings.principal ?? undefined,
      }),
    );
    // The tool guardrails check the calls the policy let through (a rewrite changes what runs).
    // Awaited only with tool guardrails: other runs take the same steps as before them.
    const guarded = checksAt(loop.agent, 'tool')
      ? await screenCalls(loop, calls, verdicts, eventIteration)
      : { blocked: new Map<number, string>(), asked: new Set<number>() };
    const positions = verdicts.flatMap((verdict, index) =>
      (verdict.decision === 'approve' || guarded.asked.has(index)) && !guarded.blocked.has(index) ? [index] : [],
    );
    if (verdicts.every((verdict) => verdict.decision === 'allow') && guarded.blocked.size + guarded.asked.size === 0)
      return { type: 'decided', rejected: [] };
    // A rule that says approve gates the call whatever its review says (so does a guardrail that asks);
    // needs_approval leaves it to the review.
    const forced = positions.map((index) => 'rule' in verdicts[index]!.source || guarded.asked.has(index));
    run.live.approvals =
      positions.length > 0
        ? await approvalRecords(loop, calls, { positions, forced }, eventIteration, requestedAt)
        : [];
    for (const record of run.live.approvals)
      emit(run, { event_type: 'approval_requested', ...pendingOf(record) }, eventIteration);
    // Denied calls are decided now, by the policy: they never run, and the model reads why.
    verdicts.forEach((verdict, index) => {
      if (verdict.decision === 'deny') deny(loop, { call: calls[index]!, index, verdict }, eventIteration, requestedAt);
    });
    // So are calls a guardrail blocked: their verdicts are in the log already.
    for (const [index, reason] of guarded.blocked)
      run.live.approvals.push(rejectedRecord(calls[index]!, index, { reason, by: 'guardrail' }, requestedAt));
  }
  await awaitDecisions(loop, eventIteration, onWait);
  if (run.live.abort.requested) return { type: 'aborted' };
  return { type: 'decided', rejected: rejectedResults(run, calls) };
}

/**
 * Waits until every record of `run.live.approvals` is decided (the `approve` update, or the timeout
 * `approval_timeout_seconds`), or an abort: a timer that says so in the Temporal UI, no activity.
 */
export async function awaitDecisions(
  loop: Pick<LoopContext, 'run' | 'agent'>,
  eventIteration: number,
  onWait?: ApprovalWaitHook,
): Promise<void> {
  const run = loop.run;
  keepVisible(run);
  while (!run.live.abort.requested && undecided(run).length > 0) {
    const waiting = `waiting for approval: ${undecided(run)
      .map((record) => `${record.tool_name} (${record.tool_call_id})`)
      .join(', ')}`;
    setCurrentDetails(waiting);
    await onWait?.();
    const seen = run.live.approvalDecisions;
    const woke = () => run.live.abort.requested || run.live.approvalDecisions !== seen;
    const remaining = remainingMs(run, loop.agent.limits.approval_timeout_seconds);
    const label = `${waiting}; decide with npx patchloop approve or reject (npx patchloop approvals ${workflowInfo().workflowId})`;
    // Only a wait with a deadline can time out.
    const timedOut =
      remaining === null
        ? !(await waitForDecision(label, woke))
        : remaining <= 0 || !(await waitForDecision(label, woke, remaining));
    if (timedOut) {
      for (const record of undecided(run))
        decide(run, record, { approved: false, reason: APPROVAL_TIMED_OUT, by: 'timeout' }, eventIteration);
    }
  }
}

/**
 * A call the policy denied: decided by it, not by a person. Its record carries the rejection (and travels
 * with the batch across continue-as-new); the log says which rule denied it.
 */
function deny(
  loop: LoopContext,
  denied: { call: ToolCallRequest; index: number; verdict: PolicyVerdict },
  eventIteration: number,
  requestedAt: string,
): void {
  const { call, index, verdict } = denied;
  const reason = verdict.reason ?? `denied by ${describeSource(loop.agent, verdict.source)}`;
  loop.run.live.approvals.push(rejectedRecord(call, index, { reason, by: 'policy' }, requestedAt));
  emit(
    loop.run,
    {
      event_type: 'custom_event',
      event_name: 'tool_denied',
      data: { reason, rule: 'rule' in verdict.source ? verdict.source.rule + 1 : null },
      tool_name: call.name,
      tool_call_id: call.id,
    },
    eventIteration,
  );
}

/** The record of a call decided without a person: it never runs, and its result says why. */
function rejectedRecord(
  call: ToolCallRequest,
  index: number,
  decision: { reason: string; by: 'policy' | 'guardrail' },
  requestedAt: string,
): ApprovalRecord {
  return {
    tool_call_id: call.id,
    tool_name: call.name,
    arguments: argumentsForEvents(call.arguments),
    requested_at: requestedAt,
    call_index: index,
    decision: { approved: false, ...decision },
  };
}

/**
 * The agent's tool guardrails on each call the policy did not deny, in order: the calls they block (by
 * position, with the reason) and those a person must decide (`ask`). A rewrite replaces the call's
 * arguments in the batch (what runs, and what a carried batch holds); the model's own message keeps
 * what it asked.
 */
async function screenCalls(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  verdicts: readonly PolicyVerdict[],
  eventIteration: number,
): Promise<{ blocked: Map<number, string>; asked: Set<number> }> {
  const blocked = new Map<number, string>();
  const asked = new Set<number>();
  for (const [index, call] of calls.entries()) {
    if (verdicts[index]!.decision === 'deny') continue;
    const tool = { name: call.name, call_id: call.id };
    // Read as the tool will get them: repaired as the batch repairs them.
    const text = repairToolArguments(call.arguments).text;
    const screened = await screen(loop, { stage: 'tool', text, tool }, eventIteration);
    if (screened.decision === 'block') {
      blocked.set(index, `guardrail '${screened.check}': ${screened.reason}`);
      continue;
    }
    if (screened.decision === 'ask') asked.add(index);
    // What a check before an ask rewrote is what the person decides on, and what runs.
    if (screened.text !== text) (calls as ToolCallRequest[])[index] = { ...call, arguments: screened.text };
  }
  return { blocked, asked };
}

/** The approval records of the calls at `positions` that their review says wait for a person. */
async function approvalRecords(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  gated: { positions: number[]; forced: boolean[] },
  eventIteration: number,
  requestedAt: string,
): Promise<ApprovalRecord[]> {
  const { positions, forced } = gated;
  const candidates = positions.map((index) => calls[index]!);
  const reviews = await review(loop, candidates, eventIteration);
  // The review answers in the candidates' order.
  return reviews.flatMap((entry, at) =>
    (entry.needs_approval || forced[at]) && candidates[at]
      ? [
          {
            tool_call_id: candidates[at].id,
            tool_name: candidates[at].name,
            arguments: entry.arguments ?? argumentsForEvents(candidates[at].arguments),
            requested_at: requestedAt,
            call_index: positions[at]!,
          },
        ]
      : [],
  );
}

/** Reviews the candidates; if the review itself fails, every candidate waits for a person. */
async function review(
  loop: LoopContext,
  candidates: readonly ToolCallRequest[],
  iteration: number,
): Promise<ToolReview[]> {
  try {
    return await loop.activities.reviewToolCalls(
      {
        agent: loop.agent.name,
        iteration,
        calls: [...candidates],
        run_chain_id: workflowInfo().firstExecutionRunId,
      },
      `review before approval: ${candidates.map((call) => call.name).join(', ')}`,
    );
  } catch {
    return candidates.map((call) => ({
      tool_call_id: call.id,
      needs_approval: true,
      arguments: argumentsForEvents(call.arguments),
    }));
  }
}

export function undecided(run: Run): ApprovalRecord[] {
  return undecidedRecords(run.live.approvals);
}

export function pendingOf(record: ApprovalRecord) {
  const { decision: _decision, call_index: _index, ...pending } = record;
  return pending;
}

/** Records a decision (from the `approve` update or the timeout) and logs it. */
export function decide(
  run: Run,
  record: ApprovalRecord,
  decision: { approved: boolean; reason: string | undefined; by: 'update' | 'timeout' },
  iteration = run.durable.iteration + 1,
): void {
  const { approved, reason, by } = decision;
  record.decision = { approved, ...(reason !== undefined ? { reason } : {}), by };
  run.live.approvalDecisions += 1;
  emit(
    run,
    {
      event_type: 'approval_decided',
      tool_call_id: record.tool_call_id,
      tool_name: record.tool_name,
      approved,
      ...(reason !== undefined ? { reason } : {}),
      by,
    },
    iteration,
  );
}

/** Milliseconds left before the oldest request times out; null when there is no timeout. */
function remainingMs(run: Run, timeoutSeconds: number | null): number | null {
  if (timeoutSeconds === null) return null;
  const requested = Math.min(...undecided(run).map((record) => Date.parse(record.requested_at)));
  return requested + timeoutSeconds * 1000 - Date.now();
}

/** The results of the calls people rejected (their records say which). */
export function rejectedResults(run: Run, calls: readonly ToolCallRequest[]): WorkflowCallResult[] {
  return run.live.approvals
    .filter((record) => record.decision && !record.decision.approved)
    .flatMap((record) => {
      const call =
        record.call_index !== undefined
          ? calls[record.call_index]
          : calls.find((entry) => entry.id === record.tool_call_id);
      if (!call) return [];
      return [
        {
          call,
          content: rejectedCallContent(call.name, record.decision?.reason, record.decision?.by),
          report: { tool_call_id: call.id, tool_name: call.name, success: true, duration_ms: 0 },
        },
      ];
    });
}
