import { isCancellation } from '@temporalio/workflow';
import { repairToolArguments } from '../../context';
import {
  extraHandoffMessage,
  handedOffSpec,
  handoffMutation,
  handoffReason,
  handoffResultContent,
  handoffTarget,
  promptContractFor,
  fusableTools,
  providerTools,
  type AgentSpec,
  type ToolBatchResult,
  type ToolCallReport,
  type ToolCallRequest,
  failedCall as failed,
  type WorkflowCallResult,
} from '../../runtime';
import type { LoopContext } from './loop-context';
import { resolveAgent } from '../run/open-run';
import { phaseActivities } from './phase-activities';
import { applyAgentLimits, commit, emit } from '../run/run-state';

/**
 * Handoffs carried out by the workflow (`transfer_to_<agent>` tools, `agent_call.kind` `handoff`): the
 * batch resolves the target agent through the `resolveAgent` activity (so its spec is recorded in
 * history and every replay switches to the same spec), and the switch itself waits for the next
 * compile boundary (`settleHandoff`), where the loop's context is rebuilt for the new agent and the
 * transcript's system prompt changes by a mutation.
 *
 * No `patched()` guards this: only specs with handoff descriptors offer these tools, and no history
 * recorded before handoffs existed holds such a spec (ARCHITECTURE.md, "decisions taken from the run's
 * own recorded data").
 */

/** A handoff the batch accepted, waiting for the next compile boundary. */
export interface PendingHandoff {
  spec: AgentSpec;
  tool_name: string;
  tool_call_id: string;
  reason?: string;
}

/**
 * The batch's handoff calls, in declared order: the first resolves its agent and, when that works,
 * becomes the loop's pending handoff; every later one gets an error result saying the first one won.
 * A call whose arguments do not parse or whose agent does not resolve gets an error result, and no
 * switch happens. A call cancelled by an abort gets no result here (the batch cancels it).
 */
export async function runHandoffs(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  reports: ToolCallReport[],
): Promise<WorkflowCallResult[]> {
  const [first, ...others] = calls;
  if (!first) return [];
  const results = others.map((call) => failed(call, extraHandoffMessage(first), 0));
  const started = Date.now();
  const target = handoffTarget(loop.agent.tool_descriptors, first.name)!;
  const args = repairToolArguments(first.arguments);
  const reason = args.ok ? handoffReason(args.value) : { problem: 'Tool arguments are not a valid JSON object' };
  if ('problem' in reason) {
    results.unshift(failed(first, reason.problem, 0, args.text));
  } else {
    try {
      const spec = await resolveAgent(target);
      loop.handoff = { spec, tool_name: first.name, tool_call_id: first.id, ...reason };
      results.unshift({
        call: first,
        content: handoffResultContent(spec.name),
        report: { tool_call_id: first.id, tool_name: first.name, success: true, duration_ms: Date.now() - started },
      });
    } catch (error) {
      if (isCancellation(error) || loop.run.live.abort.requested) {
        reports.push(...results.map((result) => result.report));
        return results;
      }
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      const message = `the agent '${target}' could not be resolved: ${cause instanceof Error ? cause.message : String(cause)}`;
      results.unshift(failed(first, message, Date.now() - started, args.text));
    }
  }
  reports.push(...results.map((result) => result.report));
  return results;
}

/** After the batch: a handoff whose call ended cancelled (an abort) does not take place. */
export function keepHandoffOf(loop: LoopContext, batch: ToolBatchResult): void {
  if (loop.handoff && batch.unfinished.includes(loop.handoff.tool_call_id)) delete loop.handoff;
}

/**
 * At a compile boundary (the next iteration, or the end of a turn the batch's abort ended): the
 * pending handoff takes effect. The loop's context is rebuilt for the new agent (its spec, prompt
 * contract, tools and activity options), the run's active agent and its SelfRef and message limits
 * follow, and the transcript's system prompt becomes the new agent's instructions through a
 * `ContextReplaceMutation` (see `handoffMutation` for why that kind). Nothing else of the transcript
 * changes. The `agent_handoff` event records it.
 */
export function settleHandoff(loop: LoopContext): void {
  const pending = loop.handoff;
  if (!pending) return;
  delete loop.handoff;
  const run = loop.run;
  const from = loop.agent.name;
  useAgent(loop, handedOffSpec(loop.agent, pending.spec));
  commit(run, [handoffMutation(run.durable.transcript, loop.agent.instructions)]);
  emit(run, {
    event_type: 'agent_handoff',
    from,
    to: loop.agent.name,
    tool_name: pending.tool_name,
    tool_call_id: pending.tool_call_id,
    ...(pending.reason !== undefined ? { reason: pending.reason } : {}),
  });
}

/**
 * The loop's context for this agent, without touching the transcript: a handoff's switch, or a session
 * turn's rollback to the agent its checkpoint had (the transcript is rolled back with it).
 */
export function useAgent(loop: LoopContext, agent: AgentSpec): void {
  delete loop.handoff;
  loop.agent = agent;
  if (!loop.options.contract) loop.contract = promptContractFor(agent);
  loop.tools = providerTools(agent);
  loop.fastTools = fusableTools(agent);
  loop.activities = phaseActivities(agent);
  loop.run.settings.agent = agent.name;
  loop.run.settings.selfref = agent.selfref;
  applyAgentLimits(loop.run, agent);
}
