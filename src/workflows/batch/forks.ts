import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ChildWorkflowCancellationType,
  isCancellation,
  ParentClosePolicy,
  patched,
  startChild,
} from '@temporalio/workflow';
import {
  cloneJson,
  forkTaskContent,
  repairToolArguments,
  serializeToolResult,
  toolFailureContent,
  type JsonObject,
  type Message,
} from '../../context';
import {
  forkMessage,
  recordChildUsage,
  remainingBudget,
  type AgentRunInputWire,
  type AgentRunResult,
  type AgentSpec,
  type ToolCallRequest,
  type WorkflowCallResult,
} from '../../runtime';
import { payloadFits } from '../run/payload-budget';
import { childPrincipal } from './child-principal';
import { abortChild, emit, type Run } from '../run/run-state';
import { hasBudget } from '../loop/budget-gate';

/**
 * `selfref_fork` (spec 6.6): a child workflow of the same agent, seeded with the parent's context plus
 * the fork task message, whose final answer becomes the call's result. Children are abandoned rather
 * than cancelled when the parent closes: an abort reaches them as an `abort` signal, so each ends with
 * a valid transcript of its own.
 */
export async function runFork(
  run: Run,
  agent: AgentSpec,
  call: ToolCallRequest,
  eventIteration: number,
): Promise<WorkflowCallResult> {
  const started = Date.now();
  const args = repairToolArguments(call.arguments);
  const finish = (value: unknown): WorkflowCallResult => ({
    call,
    content: typeof value === 'string' && value.startsWith('{\n  "error"') ? value : serializeToolResult(value),
    report: { tool_call_id: call.id, tool_name: call.name, success: true, duration_ms: Date.now() - started },
  });
  const fail = (message: string) => finish(toolFailureContent(call.name, args.text, message));
  if (!args.ok) return fail('Tool arguments are not a valid JSON object');
  let message: string;
  try {
    message = forkMessage(args.value);
  } catch (error) {
    return fail((error as Error).message);
  }
  const depth = run.settings.forkDepth + 1;
  if (depth > agent.limits.max_fork_depth) return fail(`fork depth limit ${agent.limits.max_fork_depth} reached`);

  const context = inheritedContext(run.durable.transcript);
  // Without payloads by reference, the child's input (the parent's context) must fit a payload.
  const size = payloadFits(agent, context);
  if (!size.fits && patched('fork-context-budget')) {
    return fail(`the context is ${size.bytes} bytes: too large to fork without payload storage`);
  }
  const { child, meta } = await startForkChild(run, agent, message, context, depth);
  const custom = (event_name: string, data: JsonObject) =>
    emit(
      run,
      { event_type: 'custom_event', event_name, data, tool_name: call.name, tool_call_id: call.id },
      eventIteration,
    );
  custom('selfref_fork_start', { ...meta, status: 'running' });
  try {
    const result = (await child.result()) as AgentRunResult;
    // What the child spent counts against the parent's budget too.
    run.durable.ledger = recordChildUsage(run.durable.ledger, result.usage, run.settings.budget.prices);
    // An abort of the parent cancels its unfinished fork calls (6.6 step 9); the child ends on its own.
    if (run.live.abort.requested && result.status === 'aborted') throw new ForkCancelled();
    custom('selfref_fork_end', { ...meta, status: result.status });
    return finish({
      ...meta,
      status: result.status,
      response: result.answer,
      result: result.answer,
      history_count: result.transcript_length ?? result.transcript.length,
      history_included: false,
    });
  } catch (error) {
    if (error instanceof ForkCancelled || isCancellation(error) || run.live.abort.requested) throw error;
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    const errorType = cause?.type ?? (error as Error).name;
    const errorMessage = cause?.message ?? (error as Error).message;
    custom('selfref_fork_error', { ...meta, status: 'error', error_type: errorType, error_message: errorMessage });
    return finish({
      ...meta,
      status: 'error',
      response: null,
      result: null,
      history_count: 0,
      history_included: false,
      error_type: errorType,
      error_message: errorMessage,
    });
  } finally {
    run.live.children.delete(meta.memory_key);
  }
}

class ForkCancelled extends Error {
  override readonly name = 'ForkCancelled';
}

/** The parent's durable transcript without a trailing in-flight tool-call message (6.6 step 1). */
function inheritedContext(transcript: readonly Message[]): Message[] {
  const copy = cloneJson(transcript) as Message[];
  const last = copy.at(-1);
  if (last?.['role'] === 'assistant' && Array.isArray(last['tool_calls']) && last['tool_calls'].length > 0) copy.pop();
  return copy;
}

async function startForkChild(run: Run, agent: AgentSpec, message: string, context: Message[], depth: number) {
  // n counts from 1 and skips keys that already exist (6.6 step 4).
  for (;;) {
    run.durable.fork_count += 1;
    const meta = {
      fork_id: `fork_${run.durable.fork_count}`,
      parent_fork_id: run.settings.forkId,
      depth,
      source_memory_key: run.settings.memoryKey,
      memory_key: `${run.settings.memoryKey}::fork::${run.durable.fork_count}`,
    };
    const input: AgentRunInputWire = {
      agent: agent.name,
      input: message,
      fork: { ...meta, context: [...context, { role: 'user', content: forkTaskContent(message) }] },
      // A child spends from what its parent has left, and keeps inside the same window.
      ...(hasBudget(run) ? { budget: remainingBudget(run.settings.budget, run.durable.ledger, Date.now()) } : {}),
      ...(run.settings.contextSettings.window_tokens !== null ? { context: run.settings.contextSettings } : {}),
      ...childPrincipal(run).input,
    };
    try {
      const child = await startChild('agentRun', {
        workflowId: meta.memory_key,
        args: [input],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        ...childPrincipal(run).options,
      });
      run.live.children.set(meta.memory_key, child);
      if (run.live.abort.requested) abortChild(run, child);
      return { child, meta };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
}
