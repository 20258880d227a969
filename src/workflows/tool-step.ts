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
  queueIntent,
  SELFREF_FORK,
  withAbortReason,
  type ToolBatchInput,
  type ToolBatchResult,
  type RunningBatch,
  type ToolCallReport,
  type ToolCallRequest,
} from '../runtime';
import {
  cancelledBatch,
  EMPTY_BATCH,
  failedBatch,
  mergeBatches,
  mutationsByCallId,
  type WorkflowCallResult,
} from './batch';
import { approvalGate, rejectedResults, type ApprovalWaitHook, type GateOutcome } from './approval-gate';
import { runFork } from './forks';
import { handoffCalls, runHandoffs } from './handoffs';
import { runSubagent, subagentWorkflowId } from './subagents';
import type { LoopContext } from './loop-context';
import { inPhaseScope } from './phase-scope';
import * as events from './run-events';
import { deliverChildSignals, emit, type Run } from './run-state';
import { keepVisible } from './visibility';

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
  const gate: GateOutcome = options.running
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
      : await runBatch(loop, calls, eventIteration, gate.rejected, options);
  run.live.approvals = [];
  const batch = { ...raw, mutations: withAbortReason(raw.mutations, run.live.abort.reason) };
  for (const event of events.batchOutcome(calls, batch, Date.now() - startedAt)) emit(run, event, eventIteration);
  // Intents of finished calls queue in declared order; cancelled calls queue nothing (6.2).
  for (const record of batch.intents) {
    if (!batch.unfinished.includes(record.tool_call_id)) queueIntent(run.durable.selfref_queue, record.intent);
  }
  return batch;
}

/**
 * The activity runs the tools; the workflow runs forks and sub-agent calls as child workflows, and
 * handoffs, concurrently with it.
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
  // Workflow calls an earlier run of the chain finished, by position.
  const finished = new Map(
    (carried?.finished ?? []).map((entry) => [
      entry.call_index,
      { call: calls[entry.call_index]!, content: entry.content, report: entry.report },
    ]),
  );
  // By the call itself, not its id: a provider may repeat an id within one batch.
  const runs = (call: ToolCallRequest) => !rejected.some((result) => result.call === call);
  // Sub-agent calls of the batch share what the run has left of its budget.
  const share = calls.filter((call) => runs(call) && agentCallOf(loop, call)?.kind === 'subagent').length;
  const own = calls.map((call, index) =>
    runs(call)
      ? workflowCall(loop, calls, index, eventIteration, { resumed: carried !== undefined, share })
      : undefined,
  );
  // Reports in completion order, across the activity and the workflow's calls; rejected calls are done already.
  const reports: ToolCallReport[] = carried ? [...carried.reports] : rejected.map((result) => result.report);
  // Handoffs are the workflow's too (workflows/handoffs.ts).
  const handoffs = handoffCalls(loop, calls.filter(runs));
  // Everything starts inside the phase's scope, in this order (replays depend on it): the activities,
  // the handoffs, the workflow's own calls.
  const started = () => {
    const activity: Promise<ToolBatchResult> = carried
      ? Promise.resolve(carried.activity)
      : routedBatches(
          loop,
          calls.filter((call, index) => runs(call) && !own[index] && !handoffs.includes(call)),
          eventIteration,
          reports,
        );
    const handedOff = runHandoffs(loop, handoffs, reports);
    const pending = own.map((call, index) =>
      call && !finished.has(index)
        ? call.start().then(
            (result) => {
              reports.push(result.report);
              finished.set(index, result);
              return result;
            },
            // Cancelled with the run (an abort): the call gets a cancellation.
            () => null,
          )
        : undefined,
    );
    return { activity, handedOff, pending };
  };
  try {
    const [batch, handed] = await inPhaseScope(run, loop.agent.limits.abort_wait_seconds, async () => {
      const { activity, handedOff, pending } = started();
      const all = Promise.all([activity, handedOff, ...pending]);
      // Only sub-agents may be left running across continue-as-new (a fork or a handoff is not carried),
      // and only once each has started: a child whose start is still in flight when its parent's run
      // closes is never started.
      const children = own.flatMap((call, index) => (call && !finished.has(index) ? [call.child] : []));
      const subagentsOnly = children.every((child) => child !== undefined);
      if (options.onChildWait && handoffs.length === 0 && subagentsOnly && children.length > 0) {
        const childrenStarted = () =>
          own.every((call, index) => !call?.child || finished.has(index) || run.live.children.has(call.child));
        await offerBoundary(run, all, activity, finished, reports, childrenStarted, options.onChildWait);
      }
      return all;
    });
    await deliverChildSignals(run);
    return mergeBatches(calls, batch, [...rejected, ...handed, ...finished.values()], reports);
  } catch (error) {
    await deliverChildSignals(run);
    if (run.live.abort.requested) return cancelledBatch(calls);
    throw error;
  }
}

/**
 * While the batch waits for its sub-agents only, the run may continue as new: when it is due, `offer`
 * carries the batch as it stands (what the activities returned, the calls that finished) and throws.
 * An offer the run turns down (handlers still running, an abort, the carried state too large) is made
 * again only after another sub-agent finished, so the wait never spins.
 */
async function offerBoundary(
  run: Run,
  all: Promise<unknown>,
  activity: Promise<ToolBatchResult>,
  finished: ReadonlyMap<number, WorkflowCallResult>,
  reports: readonly ToolCallReport[],
  started: () => boolean,
  childWait: NonNullable<BatchOptions['onChildWait']>,
): Promise<void> {
  let settled = false;
  all.then(
    () => (settled = true),
    () => (settled = true),
  );
  try {
    const activityResult = await activity;
    let offeredAt = -1;
    while (!settled && !run.live.abort.requested) {
      await condition(
        () => settled || run.live.abort.requested || (finished.size !== offeredAt && started() && childWait.due()),
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

/**
 * A call the workflow carries out itself (a fork, a sub-agent call): how to start it, and a sub-agent's
 * child workflow id; else undefined.
 */
function workflowCall(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  index: number,
  eventIteration: number,
  batch: { resumed: boolean; share: number },
): { start: () => Promise<WorkflowCallResult>; child?: string } | undefined {
  const call = calls[index]!;
  if (loop.agent.selfref && call.name === SELFREF_FORK)
    return { start: () => runFork(loop.run, loop.agent, call, eventIteration) };
  const target = agentCallOf(loop, call);
  if (target?.kind === 'subagent') {
    const child = subagentWorkflowId(calls, index, target.agent, eventIteration);
    return {
      start: () =>
        runSubagent(loop.run, loop.agent, call, target.agent, eventIteration, { workflowId: child, ...batch }),
      child,
    };
  }
  return undefined;
}

/** The agent a call reaches, when its tool is a sub-agent or handoff tool. */
function agentCallOf(loop: LoopContext, call: ToolCallRequest) {
  return loop.agent.tool_descriptors.find((tool) => tool.name === call.name)?.agent_call;
}

/**
 * The activity calls of a batch: one batch activity on the workflow's own queue, plus one per task queue
 * that tools are routed to, all at once. Their results merge back into the batch's declared order.
 */
async function routedBatches(
  loop: LoopContext,
  calls: ToolCallRequest[],
  eventIteration: number,
  reports: ToolCallReport[],
): Promise<ToolBatchResult> {
  const routes = loop.agent.tool_task_queues ?? {};
  const groups = new Map<string | undefined, ToolCallRequest[]>();
  for (const call of calls) {
    const queue = routes[call.name];
    groups.set(queue, [...(groups.get(queue) ?? []), call]);
  }
  if (groups.size <= 1) return activityBatch(loop, calls, eventIteration, reports, [...groups.keys()][0]);
  const entries = [...groups];
  const batches = await Promise.all(
    entries.map(([queue, group]) => activityBatch(loop, group, eventIteration, reports, queue)),
  );
  // Each call takes the next result for its id from its own queue's batch: a provider may repeat an id
  // within one batch, even across queues.
  const resultsByQueue = new Map(
    entries.map(([queue], index) => [queue, mutationsByCallId(batches[index]!.mutations)]),
  );
  const declared = calls.flatMap((call) => resultsByQueue.get(routes[call.name])?.get(call.id)?.shift() ?? []);
  const position = new Map(calls.map((call, index) => [call.id, index]));
  const order = (id: string) => position.get(id) ?? 0;
  return {
    outcome: batches.some((batch) => batch.outcome === 'aborted') ? 'aborted' : 'completed',
    // In declared order (mergeBatches then puts multimodal results last); intents too.
    mutations: declared,
    reports: [],
    unfinished: batches.flatMap((batch) => batch.unfinished),
    intents: batches
      .flatMap((batch) => batch.intents ?? [])
      .sort((a, b) => order(a.tool_call_id) - order(b.tool_call_id)),
    custom_events: batches.flatMap((batch) => batch.custom_events ?? []),
  };
}

/** A failed batch (all attempts) becomes error results the model sees, unless the run was aborted. */
async function activityBatch(
  loop: LoopContext,
  calls: ToolCallRequest[],
  eventIteration: number,
  reports: ToolCallReport[],
  taskQueue?: string,
): Promise<ToolBatchResult> {
  if (calls.length === 0) return EMPTY_BATCH;
  const input = {
    agent: loop.agent.name,
    iteration: eventIteration,
    calls,
    run_chain_id: workflowInfo().firstExecutionRunId,
    ...mcpTools(loop, calls),
  };
  const local = allFast(loop, calls, taskQueue);
  try {
    const summary = `tools: ${toolNames(calls)}${taskQueue ? ` on ${taskQueue}` : ''}`;
    const result = local
      ? await loop.activities.localToolBatch(input, summary)
      : await loop.activities.toolBatch(input, summary, taskQueue);
    reports.push(...result.reports);
    if (local) await letSignalsIn(result);
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

/** Which MCP server serves each call's tool, from the spec the run recorded (absent: no MCP calls). */
function mcpTools(loop: LoopContext, calls: readonly ToolCallRequest[]): { mcp_tools?: ToolBatchInput['mcp_tools'] } {
  const tools: NonNullable<ToolBatchInput['mcp_tools']> = {};
  for (const tool of loop.agent.tool_descriptors)
    if (tool.mcp && calls.some((call) => call.name === tool.name)) tools[tool.name] = tool.mcp;
  return Object.keys(tools).length > 0 ? { mcp_tools: tools } : {};
}

/**
 * Calls of fast tools only, on the workflow's own queue, run as one local activity: no dispatch of their
 * own. Decided from the spec the run recorded, so a replay takes the same path.
 */
function allFast(loop: LoopContext, calls: readonly ToolCallRequest[], taskQueue: string | undefined): boolean {
  if (taskQueue !== undefined) return false;
  const fast = new Set(loop.agent.tool_descriptors.filter((tool) => tool.fast).map((tool) => tool.name));
  return calls.every((call) => fast.has(call.name));
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
export function toolNames(calls: readonly ToolCallRequest[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
  return [...counts].map(([name, count]) => (count > 1 ? `${name} x${count}` : name)).join(', ');
}
