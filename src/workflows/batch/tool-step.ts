import {
  ActivityFailure,
  condition,
  isCancellation,
  setCurrentDetails,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import {
  cancelledBatch,
  EMPTY_BATCH,
  mergeInDeclaredOrder,
  planBatch,
  queueIntent,
  withAbortReason,
  type ActivityGroup,
  type BatchPlan,
  type WorkflowCallResult,
  type ToolBatchResult,
  type RunningBatch,
  type ToolCallReport,
  type ToolCallRequest,
} from '../../runtime';
import { failedBatch } from './failed-batch';
import { screenedResults } from './result-guardrails';
import { checksAt } from '../loop/guardrail-checks';
import { approvalGate, rejectedResults, type ApprovalWaitHook, type GateOutcome } from './approval-gate';
import { runFork } from './forks';
import { runWait } from './durable-waits';
import { recordedResults } from './recorded-tools';
import { runHandoffs } from '../loop/handoffs';
import { runSubagent, subagentWorkflowId } from './subagents';
import type { LoopContext } from '../loop/loop-context';
import { inPhaseScope } from '../loop/phase-scope';
import * as events from '../run/run-events';
import { deliverChildSignals, emit, type Run } from '../run/run-state';
import { keepVisible } from '../run/visibility';

/** How a batch begins: anew, or resumed by a new run of the chain (waiting for decisions, or running). */
export interface BatchOptions {
  resumed: boolean;
  onWait?: ApprovalWaitHook;
  /**
   * While only sub-agent calls are still out: `due` says the run should continue as new, `offer` lets it
   * (it throws then, carrying the batch as it stands).
   */
  onChildWait?: { due: () => boolean; offer: (batch: () => RunningBatch) => Promise<void> };
  /** The batch as an earlier run of the chain carried it: what finished, the rest re-attached. */
  running?: RunningBatch;
  /** The batch as the model call's activity ran it (fast tools only): its calls ran; nothing is decided. */
  prefetched?: ToolBatchResult;
}

/**
 * One tool batch (spec 7.6): the calls run concurrently, results come back in declared order. Gated
 * calls wait for decisions first; rejected ones get a rejection result. After an abort nothing runs
 * and every call gets a cancellation. SelfRef intents of finished calls queue for
 * the next compile boundary (6.2).
 */
export async function toolStep(
  loop: LoopContext,
  calls: ToolCallRequest[],
  eventIteration: number,
  options: BatchOptions = { resumed: false },
): Promise<ToolBatchResult> {
  const run = loop.run;
  const [batchStart, ...callStarts] = events.batchStart(calls);
  if (!options.resumed) emit(run, batchStart!, eventIteration);
  // A batch that was running when the run continued as new was decided before: it goes on (an abort
  // reaches its sub-agents once they are found again).
  const gate: GateOutcome = options.prefetched
    ? { type: 'decided', rejected: [] }
    : options.running
      ? { type: 'decided', rejected: rejectedResults(run, calls) }
      : run.live.abort.requested
        ? { type: 'aborted' }
        : await approvalGate(loop, calls, eventIteration, options.resumed, options.onWait);
  // Calls start once the batch may run: after every gated call is decided. Calls that will not run
  // (rejected, or the whole batch aborted while it waited) do not start.
  const waited = run.live.approvals.length > 0;
  callStarts.forEach((event, index) => {
    const call = calls[index]!;
    const skipped = gate.type === 'aborted' ? waited : gate.rejected.some((result) => result.call === call);
    if (!skipped && !options.running) emit(run, event, eventIteration);
  });
  keepVisible(run);
  setCurrentDetails(`iteration ${eventIteration}: running tools ${toolNames(calls)}`);
  const startedAt = Date.now();
  const raw =
    gate.type === 'aborted'
      ? cancelledBatch(calls)
      : await runBatch(
          loop,
          calls,
          eventIteration,
          [...gate.rejected, ...recordedResults(loop, calls, gate.rejected)],
          options,
        );
  run.live.approvals = [];
  const skipped = new Set(gate.type === 'decided' ? gate.rejected.map((result) => result.call.id) : []);
  // Awaited only with result guardrails: other runs take the same steps as before them.
  const screened =
    gate.type === 'aborted' || !checksAt(loop.agent, 'tool_result')
      ? raw
      : await screenedResults(loop, calls, raw, skipped, eventIteration);
  const batch = { ...screened, mutations: withAbortReason(screened.mutations, run.live.abort.reason) };
  for (const event of events.batchOutcome(calls, batch, Date.now() - startedAt)) emit(run, event, eventIteration);
  // Intents of finished calls queue in declared order; cancelled calls queue nothing (6.2).
  for (const record of batch.intents) {
    if (!batch.unfinished.includes(record.tool_call_id)) queueIntent(run.durable.selfref_queue, record.intent);
  }
  return batch;
}

/** A call the workflow carries out itself (a fork, a sub-agent call, a wait): how to start it, and a sub-agent's child id. */
interface OwnCall {
  start: () => Promise<WorkflowCallResult>;
  child?: string;
}

/** What a batch's calls share while they run: results so far, and reports in completion order. */
interface BatchProgress {
  /** Workflow calls that finished (an earlier run of the chain's too), by position. */
  finished: Map<number, WorkflowCallResult>;
  reports: ToolCallReport[];
}

/**
 * Carries out a batch's plan: the activities run the tools, the workflow runs forks, sub-agent calls and
 * handoffs, all concurrently; the results merge back into the declared order.
 */
async function runBatch(
  loop: LoopContext,
  calls: ToolCallRequest[],
  eventIteration: number,
  rejected: readonly WorkflowCallResult[],
  options: BatchOptions,
): Promise<ToolBatchResult> {
  const run = loop.run;
  const carried = options.running;
  const plan = planBatch(loop.agent, calls, (call) => rejected.some((result) => result.call === call));
  const progress: BatchProgress = {
    finished: new Map(
      (carried?.finished ?? []).map((entry) => [
        entry.call_index,
        { call: calls[entry.call_index]!, content: entry.content, report: entry.report },
      ]),
    ),
    // Rejected calls are done already.
    reports: carried ? [...carried.reports] : rejected.map((result) => result.report),
  };
  const own = ownCalls(loop, calls, plan, { eventIteration, resumed: carried !== undefined });
  try {
    const [activity, handed] = await inPhaseScope(run, loop.agent.limits.abort_wait_seconds, async () => {
      const started = startBatch(loop, plan, own, progress, {
        eventIteration,
        carried,
        prefetched: options.prefetched,
      });
      const all = Promise.all([started.activity, started.handedOff, ...started.pending]);
      // Only sub-agents may be left running across continue-as-new (a fork or a handoff is not carried),
      // and only once each has started: a child whose start is still in flight when its parent's run
      // closes is never started.
      const children = own.flatMap((call, index) => (call && !progress.finished.has(index) ? [call.child] : []));
      const subagentsOnly = children.every((child) => child !== undefined);
      if (options.onChildWait && plan.handoffs.length === 0 && subagentsOnly && children.length > 0) {
        const childrenStarted = () =>
          own.every((call, index) => !call?.child || progress.finished.has(index) || run.live.children.has(call.child));
        await offerBoundary(run, { all, activity: started.activity, progress, childrenStarted }, options.onChildWait);
      }
      return all;
    });
    await deliverChildSignals(run);
    const ownResults = [...rejected, ...handed, ...progress.finished.values()];
    return mergeInDeclaredOrder(calls, [{ calls: plan.activityCalls, result: activity }], ownResults, progress.reports);
  } catch (error) {
    await deliverChildSignals(run);
    if (run.live.abort.requested) return cancelledBatch(calls);
    throw error;
  }
}

/**
 * Starts everything inside the phase's scope, in this order (replays depend on it): the activities, the
 * handoffs, the workflow's own calls. A batch an earlier run of the chain carried has its activities'
 * result, and starts only the calls that did not finish.
 */
function startBatch(
  loop: LoopContext,
  plan: BatchPlan,
  own: ReadonlyArray<OwnCall | undefined>,
  progress: BatchProgress,
  batch: { eventIteration: number; carried: RunningBatch | undefined; prefetched: ToolBatchResult | undefined },
) {
  const activity: Promise<ToolBatchResult> = batch.carried
    ? Promise.resolve(batch.carried.activity)
    : batch.prefetched
      ? ranWithReply(batch.prefetched, progress.reports, loop.agent.limits.llm_local_activity)
      : routedBatches(loop, plan, batch.eventIteration, progress.reports);
  const handedOff = runHandoffs(loop, plan.handoffs, progress.reports);
  const pending = own.map((call, index) =>
    call && !progress.finished.has(index)
      ? call.start().then(
          (result) => {
            progress.reports.push(result.report);
            progress.finished.set(index, result);
            return result;
          },
          // Cancelled with the run (an abort): the call gets a cancellation.
          () => null,
        )
      : undefined,
  );
  return { activity, handedOff, pending };
}

/**
 * While the batch waits for its sub-agents only, the run may continue as new: when it is due, `offer`
 * carries the batch as it stands (what the activities returned, the calls that finished) and throws.
 * An offer the run turns down (handlers still running, an abort, the carried state too large) is made
 * again only after another sub-agent finished, so the wait never spins.
 */
async function offerBoundary(
  run: Run,
  batch: {
    all: Promise<unknown>;
    activity: Promise<ToolBatchResult>;
    progress: BatchProgress;
    childrenStarted: () => boolean;
  },
  childWait: NonNullable<BatchOptions['onChildWait']>,
): Promise<void> {
  const { finished, reports } = batch.progress;
  let settled = false;
  batch.all.then(
    () => (settled = true),
    () => (settled = true),
  );
  try {
    const activityResult = await batch.activity;
    let offeredAt = -1;
    while (!settled && !run.live.abort.requested) {
      await condition(
        () =>
          settled ||
          run.live.abort.requested ||
          (finished.size !== offeredAt && batch.childrenStarted() && childWait.due()),
      );
      if (settled || run.live.abort.requested) return;
      offeredAt = finished.size;
      // Read when the run continues, after its handlers finished: a child may end meanwhile.
      await childWait.offer(() => ({
        activity: activityResult,
        finished: [...finished].map(([call_index, result]) => ({
          call_index,
          content: result.content,
          report: result.report,
        })),
        reports: [...reports],
      }));
    }
  } catch (error) {
    // An abort cancels the wait: the batch ends as its calls do.
    if (!isCancellation(error)) throw error;
  }
}

/** The calls of the plan the workflow carries out itself, by position (undefined for the others). */
function ownCalls(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  plan: BatchPlan,
  batch: { eventIteration: number; resumed: boolean },
): Array<OwnCall | undefined> {
  return calls.map((call, index): OwnCall | undefined => {
    const route = plan.routes[index]!;
    if (route.kind === 'fork') return { start: () => runFork(loop.run, loop.agent, call, batch.eventIteration) };
    if (route.kind === 'wait') return { start: () => runWait(loop.run, call, batch.eventIteration) };
    if (route.kind !== 'subagent') return undefined;
    const child = subagentWorkflowId(calls, index, route.agent, batch.eventIteration);
    const subagent = { call, target: route.agent, eventIteration: batch.eventIteration, workflowId: child };
    const options = { ...subagent, resumed: batch.resumed, share: plan.subagents };
    return { start: () => runSubagent(loop.run, loop.agent, options), child };
  });
}

/**
 * The activity calls of a batch: one batch activity per task queue of the plan (the run's own, and those
 * tools are routed to), all at once; their results merge back into the calls' declared order.
 */
async function routedBatches(
  loop: LoopContext,
  plan: BatchPlan,
  eventIteration: number,
  reports: ToolCallReport[],
): Promise<ToolBatchResult> {
  if (plan.groups.length === 0) return EMPTY_BATCH;
  const results = await Promise.all(plan.groups.map((group) => activityBatch(loop, group, eventIteration, reports)));
  if (results.length === 1) return results[0]!;
  const parts = plan.groups.map((group, index) => ({ calls: group.calls, result: results[index]! }));
  // The batch's reports are the ones gathered in completion order.
  return mergeInDeclaredOrder(plan.activityCalls, parts, [], []);
}

/** A failed batch (all attempts) becomes error results the model sees, unless the run was aborted. */
async function activityBatch(
  loop: LoopContext,
  group: ActivityGroup,
  eventIteration: number,
  reports: ToolCallReport[],
): Promise<ToolBatchResult> {
  const { calls, queue: taskQueue } = group;
  const input = {
    agent: loop.agent.name,
    iteration: eventIteration,
    calls,
    run_chain_id: workflowInfo().firstExecutionRunId,
    ...(group.mcp_tools ? { mcp_tools: group.mcp_tools } : {}),
  };
  try {
    const summary = `tools: ${toolNames(calls)}${taskQueue ? ` on ${taskQueue}` : ''}`;
    const result = group.local
      ? await loop.activities.localToolBatch(input, summary)
      : await loop.activities.toolBatch(input, summary, taskQueue);
    reports.push(...result.reports);
    if (group.local) await letSignalsIn(result);
    return result;
  } catch (error) {
    if (loop.run.live.abort.requested) return cancelledBatch(calls);
    const unserved =
      taskQueue !== undefined &&
      error instanceof ActivityFailure &&
      error.cause instanceof TimeoutFailure &&
      error.cause.timeoutType === 'SCHEDULE_TO_START';
    return failedBatch(
      calls,
      unserved ? new Error(`no worker took these tools from task queue '${taskQueue}' in time`) : error,
    );
  }
}

/**
 * The batch the model call's activity ran: taken as a local activity's result would be. An activity's
 * completion came in a workflow task of its own, signals with it; a local model call's (the agent's
 * `llm_local_activity`) came inside the task, so a slow batch lets signals in as a local batch does.
 */
async function ranWithReply(
  batch: ToolBatchResult,
  reports: ToolCallReport[],
  localCall: boolean,
): Promise<ToolBatchResult> {
  reports.push(...batch.reports);
  if (localCall) await letSignalsIn(batch);
  return batch;
}

/**
 * A local batch runs inside the workflow task, so a signal that arrived meanwhile (an abort, a user
 * message) is not seen until the task ends. After a batch slow enough for that to matter, a 1 ms timer
 * ends the task before the next model call starts: an abort then stops the run at this boundary
 * instead of cancelling a model call it just started. Decided from the recorded durations: replays agree.
 */
const SIGNAL_BOUNDARY_MS = 200;

async function letSignalsIn(batch: ToolBatchResult): Promise<void> {
  const longest = Math.max(0, ...batch.reports.map((report) => report.duration_ms));
  if (longest < SIGNAL_BOUNDARY_MS) return;
  // Cancelled when an abort arrives: the batch's results stand all the same.
  await sleep(1, { summary: `tools took ${longest} ms: signals that came meanwhile are read first` }).catch(
    () => undefined,
  );
}

/** `add, repeat x2`: the batch's tools, for the UI's activity summary and current details. */
function toolNames(calls: readonly ToolCallRequest[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
  return [...counts].map(([name, count]) => (count > 1 ? `${name} x${count}` : name)).join(', ');
}
