import { blockedContent, UNCHECKED_RESULT, type ToolBatchResult, type ToolCallRequest } from '../../runtime';
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
  const names = new Map(calls.map((call) => [call.id, call.name]));
  // Each changed result's call id and the text the model reads instead.
  const changed = new Map<string, string>();
  const mutations: ToolBatchResult['mutations'] = [];
  for (const mutation of batch.mutations) {
    if (mutation.type !== 'ToolResultMutation' || skipped.has(mutation.tool_call_id)) {
      mutations.push(mutation);
      continue;
    }
    const result = { text: mutation.content, name: names.get(mutation.tool_call_id) ?? '', id: mutation.tool_call_id };
    const content = await checkedContent(loop, result, eventIteration);
    if (content !== mutation.content) changed.set(mutation.tool_call_id, content);
    mutations.push(content === mutation.content ? mutation : { ...mutation, content });
  }
  // A changed result's event shows what the model reads, not the tool's own value (nor its error).
  const reports = batch.reports.map((report) => {
    const read = changed.get(report.tool_call_id);
    if (read === undefined) return report;
    const { result: _result, error, ...rest } = report;
    return { ...rest, ...(error !== undefined ? { error: read } : {}) };
  });
  return { ...batch, mutations, reports };
}

/** One result as the checks let it go; after an abort, none is checked and none goes on. */
async function checkedContent(
  loop: LoopContext,
  result: { text: string; name: string; id: string },
  eventIteration: number,
): Promise<string> {
  if (loop.run.live.abort.requested) return UNCHECKED_RESULT;
  const tool = { name: result.name, call_id: result.id };
  const decided = await decide(loop, { stage: 'tool_result', text: result.text, tool }, eventIteration);
  if (decided.decision === 'allow') return decided.text;
  return loop.run.live.abort.requested
    ? UNCHECKED_RESULT
    : blockedContent('tool_result', decided.check, decided.reason);
}
