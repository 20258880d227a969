import { blockedContent, type ToolBatchResult, type ToolCallRequest } from '../../runtime';
import { checksAt } from '../loop/guardrail-checks';
import { decide } from '../loop/guardrail-step';
import type { LoopContext } from '../loop/loop-context';

/**
 * The agent's `tool_result` guardrails on a finished batch's text results, before the model, the events
 * or the transcript have them: a result goes on as they leave it, or is replaced by a notice naming the
 * check (`blocked`). Results decided without running (rejected, denied, blocked calls: `skipped`) are
 * not checked; nor are images.
 */
export async function screenedResults(
  loop: LoopContext,
  calls: readonly ToolCallRequest[],
  batch: ToolBatchResult,
  skipped: ReadonlySet<string>,
  eventIteration: number,
): Promise<ToolBatchResult> {
  if (!checksAt(loop.agent, 'tool_result')) return batch;
  const names = new Map(calls.map((call) => [call.id, call.name]));
  const changed = new Set<string>();
  const mutations: ToolBatchResult['mutations'] = [];
  for (const mutation of batch.mutations) {
    if (mutation.type !== 'ToolResultMutation' || skipped.has(mutation.tool_call_id) || loop.run.live.abort.requested) {
      mutations.push(mutation);
      continue;
    }
    const tool = { name: names.get(mutation.tool_call_id) ?? '', call_id: mutation.tool_call_id };
    const decided = await decide(loop, { stage: 'tool_result', text: mutation.content, tool }, eventIteration);
    const content =
      decided.decision === 'allow' ? decided.text : blockedContent('tool_result', decided.check, decided.reason);
    if (content !== mutation.content) changed.add(mutation.tool_call_id);
    mutations.push(content === mutation.content ? mutation : { ...mutation, content });
  }
  // A changed result's event shows what the model reads, not the tool's own value.
  const reports = batch.reports.map((report) => {
    if (!changed.has(report.tool_call_id)) return report;
    const { result: _result, ...rest } = report;
    return rest;
  });
  return { ...batch, mutations, reports };
}
