import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/common';
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { repairToolArguments, serializeToolResult } from '../../context';
import {
  addUsage,
  digestText,
  failedRunOutcome,
  recordChildUsage,
  remainingBudget,
  subagentPrompt,
  subagentTask,
  type AgentRunInputWire,
  type AgentRunOutcome,
  type AgentRunResult,
  type AgentSpec,
  type RunSpending,
  type TokenUsage,
  type ToolCallRequest,
  utf8Bytes,
  failedCall,
  succeededCall,
  type WorkflowCallResult,
} from '../../runtime';
import { hasBudget } from '../loop/budget-gate';
import { childPrincipal } from './child-principal';
import { abortChild, childPending, emit, forgetChildApprovals, type Run } from '../run/run-state';
import { keepVisible } from '../run/visibility';

/** How a sub-agent call ended, as its `subagent_finished` event says. */
type SubagentStatus = 'completed' | 'failed' | 'aborted' | 'budget_exhausted';

/**
 * A sub-agent call (`subagents` in the agent definition): a child `agentRun` of the named agent, whose
 * answer is the call's result. Its workflow id is derived from this run's workflow id, the iteration and
 * the call id, and a finished id is never reused, so a replay, a retried task or a later run of this chain
 * that makes the same call finds the child it started instead of starting the work again. Children are
 * abandoned, not cancelled, when a run closes (Temporal applies a parent-close policy at continue-as-new
 * too): an abort reaches them as an `abort` signal, so each ends with a valid transcript of its own.
 */
export async function runSubagent(run: Run, agent: AgentSpec, child: SubagentCall): Promise<WorkflowCallResult> {
  const { call, target, eventIteration, workflowId } = child;
  const started = Date.now();
  const args = repairToolArguments(call.arguments);
  const fail = (message: string) => failedCall(call, message, Date.now() - started, args.text);
  if (!args.ok) return fail('Tool arguments are not a valid JSON object');
  const task = subagentTask(args.value);
  if ('problem' in task) return fail(task.problem);
  const depth = run.settings.agentDepth + 1;
  if (depth > agent.limits.max_agent_depth)
    return fail(`agent depth limit ${agent.limits.max_agent_depth} reached: the ${target} agent was not called`);

  const input: AgentRunInputWire = {
    agent: target,
    input: subagentPrompt(task),
    caller: { workflow_id: workflowInfo().workflowId, agent: run.settings.agent, tool_call_id: call.id, depth },
    ...childBudget(run, child.share),
    ...childPrincipal(run).input,
  };
  const about = { tool_name: call.name, tool_call_id: call.id, agent: target, child_workflow_id: workflowId };
  // A batch an earlier run of the chain carried said so already.
  if (!child.resumed) emit(run, { event_type: 'subagent_started', ...about, depth }, eventIteration);
  const finished = (status: SubagentStatus | 'cancelled', usage: TokenUsage | null, error?: string) =>
    emit(
      run,
      { event_type: 'subagent_finished', ...about, status, usage, ...(error !== undefined ? { error } : {}) },
      eventIteration,
    );
  try {
    const outcome = await childOutcome(run, workflowId, input, agent);
    const ended = endOf(outcome, target);
    const spent = spentBy(outcome);
    if (spent) chargeChild(run, spent);
    // An abort of this run cancels its unfinished calls (the child ended aborted with it).
    if (outcome.status === 'closed' && run.live.abort.requested && outcome.result.status === 'aborted')
      throw new SubagentCancelled();
    finished(ended.status, spent?.usage ?? null, ended.error);
    if (ended.answer === undefined) return fail(ended.error ?? '');
    // The answer is a tool result like any other: it keeps to the same limit.
    const content = serializeToolResult(ended.answer);
    const bytes = utf8Bytes(content);
    if (bytes > agent.limits.max_tool_result_bytes)
      return fail(`result is too large: ${bytes} bytes (limit ${agent.limits.max_tool_result_bytes})`);
    return succeededCall(call, content, Date.now() - started);
  } catch (error) {
    if (error instanceof SubagentCancelled) {
      finished('cancelled', null);
      throw error;
    }
    if (isCancellation(error) || run.live.abort.requested) {
      // Aborted with this run: the child was told to stop too. What it spent until then still counts, if
      // it ends within the abort's wait.
      const ended = run.live.children.has(workflowId) ? await spentAfterAbort(workflowId, agent) : undefined;
      if (ended) chargeChild(run, resultSpending(ended));
      finished('cancelled', ended?.usage ?? null);
      throw error;
    }
    // Anything else (a start Temporal refused, say) is this call's failure, not the batch's.
    const message = `the ${target} agent's run could not be started or awaited: ${(error as Error).message}`;
    finished('failed', null, message);
    return fail(message);
  } finally {
    run.live.children.delete(workflowId);
    forgetChildApprovals(run, workflowId);
  }
}

/** A sub-agent call of a batch: the call, the agent it reaches, and its child run. */
export interface SubagentCall {
  call: ToolCallRequest;
  target: string;
  eventIteration: number;
  workflowId: string;
  /** Started by an earlier run of the chain (its start event was emitted then). */
  resumed: boolean;
  /** How many sub-agent calls of the batch share what the run has left of its budget. */
  share: number;
}

/**
 * A child spends from what its caller has left; what it spent is charged back when it ends. Children
 * started together share it: the tree never spends more than the caller had left.
 */
function childBudget(run: Run, share: number): Pick<AgentRunInputWire, 'budget'> {
  return hasBudget(run) ? { budget: remainingBudget(run.settings.budget, run.durable.ledger, Date.now(), share) } : {};
}

/** What a child spent: a failed child spent all the same (runs recorded before its failure said what are charged nothing). */
function spentBy(outcome: Awaited<ReturnType<typeof childOutcome>>): ReturnType<typeof resultSpending> | null {
  if (outcome.status === 'closed') return resultSpending(outcome.result);
  return outcome.spent && patched('subagent-failure-charged') ? outcome.spent : null;
}

/**
 * The child's workflow id: this run's, a short hash of its chain's first run id, the agent, the iteration and
 * the call id (a provider may repeat an id within a batch: a repeat gets its position too). The same on
 * every replay and every later run of this chain, unique within it (iterations count on across
 * continue-as-new), and not shared with a later chain that reuses this workflow id (providers number
 * their call ids from call_0 again).
 */
export function subagentWorkflowId(
  calls: readonly ToolCallRequest[],
  index: number,
  target: string,
  iteration: number,
): string {
  const call = calls[index]!;
  const repeated = calls.findIndex((other) => other.id === call.id) !== index;
  const info = workflowInfo();
  // Hashed: run ids are time-ordered (UUIDv7), so their first characters are alike for chains started together.
  const chain = digestText(info.firstExecutionRunId).slice(0, 8);
  return `${info.workflowId}::${chain}::${target}::${iteration}::${call.id}${repeated ? `#${index}` : ''}`;
}

/** What a child's result says it spent. */
function resultSpending(result: AgentRunResult): RunSpending {
  return { usage: result.usage, llm_calls: result.budget?.spent.max_llm_calls ?? 0 };
}

/** What a child spent counts against its caller's budget (tokens, cost and model calls), and in its usage. */
function chargeChild(run: Run, spent: RunSpending): void {
  run.durable.ledger = recordChildUsage(run.durable.ledger, spent.usage, run.settings.budget.prices, spent.llm_calls);
  run.durable.usage = addUsage(run.durable.usage, spent.usage);
}

/**
 * A child aborted with its caller: its result once it has ended, waited for outside the cancelled scope
 * for at most the agent's `abort_wait_seconds` (a child that ends later is not charged).
 */
async function spentAfterAbort(workflowId: string, agent: AgentSpec): Promise<AgentRunResult | undefined> {
  const waitSeconds = agent.limits.abort_wait_seconds;
  const outcome = await CancellationScope.nonCancellable(() =>
    childRunActivity(agent, waitSeconds, 1)
      .awaitAgentRun({ workflow_id: workflowId, wait_seconds: waitSeconds })
      .catch(() => undefined),
  );
  return outcome?.status === 'closed' ? outcome.result : undefined;
}

/** The activity that waits for a child run this workflow cannot await itself. */
function childRunActivity(agent: AgentSpec, waitSeconds: number, maximumAttempts?: number) {
  return proxyActivities<Activities>({
    startToCloseTimeout: `${waitSeconds + 60}s`,
    heartbeatTimeout: `${agent.limits.heartbeat_timeout_seconds}s`,
    summary: 'wait for a sub-agent run',
    retry: { initialInterval: '1s', maximumInterval: '30s', ...(maximumAttempts ? { maximumAttempts } : {}) },
  });
}

class SubagentCancelled extends Error {
  override readonly name = 'SubagentCancelled';
}

/** The call's answer, or the error the model reads: which way the child ended, and why. */
function endOf(outcome: AgentRunOutcome, target: string): { status: SubagentStatus; answer?: string; error?: string } {
  if (outcome.status === 'failed')
    return { status: 'failed', error: `the ${target} agent's run failed: ${outcome.message}` };
  if (outcome.status === 'running') throw new Error('a finished child cannot be running');
  const child = outcome.result;
  switch (child.status) {
    case 'completed':
      return { status: 'completed', answer: child.answer ?? '' };
    case 'aborted':
      return {
        status: 'aborted',
        error: `the ${target} agent's run was aborted${child.abort_reason ? `: ${child.abort_reason}` : ''}`,
      };
    case 'budget_exhausted': {
      const exceeded = child.budget?.exceeded ?? [];
      return {
        status: 'budget_exhausted',
        error: `the ${target} agent's run ran out of budget${exceeded.length > 0 ? ` (${exceeded.join(', ')})` : ''}`,
      };
    }
  }
}

/**
 * Starts the child and waits for it; when its id is taken (an earlier run of this chain started it, or it
 * already ended), waits for that run instead, through an activity: a workflow can await only the children
 * it started itself.
 */
async function childOutcome(
  run: Run,
  workflowId: string,
  input: AgentRunInputWire,
  agent: AgentSpec,
): Promise<Exclude<AgentRunOutcome, { status: 'running' }>> {
  let child;
  try {
    child = await startChild('agentRun', {
      workflowId,
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      cancellationType: ChildWorkflowCancellationType.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `sub-agent ${input.agent} of ${run.settings.agent}`,
      ...childPrincipal(run).options,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    return reattach(run, workflowId, agent);
  }
  run.live.children.set(workflowId, child);
  if (run.live.abort.requested) abortChild(run, child);
  try {
    return { status: 'closed', result: (await child.result()) as AgentRunResult };
  } catch (error) {
    // Cancelled with this run (an abort): the call is cancelled, not failed.
    if (isCancellation(error) || !(error instanceof ChildWorkflowFailure)) throw error;
    return failedRunOutcome(error, 'ChildWorkflowFailure');
  }
}

/** Waits for a child this run did not start itself, a bounded activity at a time. */
async function reattach(
  run: Run,
  workflowId: string,
  agent: AgentSpec,
): Promise<Exclude<AgentRunOutcome, { status: 'running' }>> {
  const handle = getExternalWorkflowHandle(workflowId);
  run.live.children.set(workflowId, handle);
  // Calls the child reported waiting before this run continued as new count again now that it is
  // running here: the run's search attribute says so (runs recorded before this left it 'running').
  if (childPending(run).length > 0 && patched('reattached-child-approvals-visible')) keepVisible(run);
  if (run.live.abort.requested) abortChild(run, handle);
  const { awaitAgentRun } = childRunActivity(agent, 300);
  for (;;) {
    const outcome = await awaitAgentRun({ workflow_id: workflowId, wait_seconds: 300 });
    if (outcome.status !== 'running') return outcome;
  }
}
