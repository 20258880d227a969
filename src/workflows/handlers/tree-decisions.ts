import { condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import { childApprovalsSignal, decideApprovalSignal, failure, FailureType } from '../../common';
import {
  ChildApprovals,
  relayedPending,
  routeDecision,
  type ApprovalAccepted,
  type CallerOrigin,
  type PendingApproval,
  isUndecided,
} from '../../runtime';
import { decide, pendingOf, undecided } from '../batch/approval-gate';
import {
  childPending,
  forgetChildApprovals,
  rejectInput,
  runningChildren,
  setChildApprovals,
  type Run,
} from '../run/run-state';
import { keepVisible } from '../run/visibility';

/**
 * Decisions that reach the top of a call tree: each sub-agent run tells its caller which calls of its
 * subtree wait (its own, marked with its workflow id and agent, then its sub-agents'), on every change;
 * the caller lists them as its own pending approvals and passes a decision down to the run it is for.
 */

/**
 * What the run's caller should list: its own undecided calls, marked, then those of its sub-agents
 * (bounded: `relayedPending`).
 */
function subtreePending(run: Run): PendingApproval[] {
  const self = workflowInfo().workflowId;
  return relayedPending([
    ...undecided(run).map((record) => ({ ...pendingOf(record), workflow_id: self, agent: run.settings.agent })),
    ...childPending(run),
  ]);
}

/** A sub-agent run keeps its caller told, for as long as it runs (a signal per change). */
export function relayDecisionsUp(run: Run, caller: CallerOrigin): void {
  const self = workflowInfo().workflowId;
  const parent = getExternalWorkflowHandle(caller.workflow_id);
  const current = () => JSON.stringify(subtreePending(run));
  let sent = '[]';
  const relay = async () => {
    for (;;) {
      await condition(() => current() !== sent);
      sent = current();
      const pending = JSON.parse(sent) as PendingApproval[];
      // Its caller may have ended meanwhile: nobody is left to tell.
      run.live.childSignals.push(
        parent.signal(childApprovalsSignal, { child_workflow_id: self, pending }).catch(() => undefined),
      );
    }
  };
  void relay();
}

/** Records a decision where it belongs: on one of the run's own calls, or sent down to a sub-agent run. */
export async function applyDecision(run: Run, payload: unknown, via: 'update' | 'signal'): Promise<ApprovalAccepted> {
  const routed = routeDecision(workflowInfo().workflowId, run.live.approvals, runningChildren(run), payload);
  if ('refusal' in routed) {
    // An ApplicationFailure fails the update; any other error would fail the workflow task.
    if (via === 'update') throw failure(FailureType.ApprovalRefused, routed.refusal);
    rejectInput(run, 'decide_approval', 'signal', routed.refusal);
    return { tool_call_id: '', approved: false };
  }
  if ('own' in routed) {
    const { own } = routed;
    for (const record of run.live.approvals)
      if (record.tool_call_id === own.tool_call_id && isUndecided(record))
        decide(run, record, { approved: own.approved, reason: own.reason, by: 'update' });
    return { tool_call_id: own.tool_call_id, approved: own.approved };
  }
  const { child, decision } = routed;
  try {
    await getExternalWorkflowHandle(child).signal(decideApprovalSignal, decision);
  } catch {
    // The child ended since it last reported (its calls wait no more): nothing is decided.
    forgetChildApprovals(run, child);
    keepVisible(run);
    const message = `the sub-agent run ${child} has ended: tool call '${decision.tool_call_id}' waits no more`;
    if (via === 'update') throw failure(FailureType.ApprovalRefused, message);
    rejectInput(run, 'decide_approval', 'signal', message);
    return { tool_call_id: decision.tool_call_id, approved: false };
  }
  // Listed no more: the child reports its new list once it has recorded the decision.
  const left = (run.durable.child_approvals?.[child] ?? []).filter(
    (entry) => entry.tool_call_id !== decision.tool_call_id || entry.workflow_id !== decision.workflow_id,
  );
  setChildApprovals(run, child, left);
  keepVisible(run);
  return { tool_call_id: decision.tool_call_id, approved: decision.approved, workflow_id: decision.workflow_id! };
}

/** The signals between the runs of a call tree. */
export function registerTreeHandlers(run: Run): void {
  setHandler(childApprovalsSignal, (payload) => {
    const parsed = ChildApprovals.safeParse(payload);
    if (!parsed.success)
      return rejectInput(run, 'child_approvals', 'signal', parsed.error.issues[0]?.message ?? 'invalid');
    // Only this run's sub-agents report here: their ids begin with its own.
    if (!parsed.data.child_workflow_id.startsWith(`${workflowInfo().workflowId}::`))
      return rejectInput(
        run,
        'child_approvals',
        'signal',
        `${parsed.data.child_workflow_id} is no sub-agent of this run`,
      );
    // Bounded here too: a child of another build may send more.
    setChildApprovals(run, parsed.data.child_workflow_id, relayedPending(parsed.data.pending));
    keepVisible(run);
  });
  setHandler(decideApprovalSignal, async (payload) => {
    if (run.live.state !== 'running')
      return rejectInput(run, 'decide_approval', 'signal', `the run is ${run.live.state}`);
    if (run.live.abort.requested) return rejectInput(run, 'decide_approval', 'signal', 'the run is being aborted');
    await applyDecision(run, payload, 'signal');
  });
}
