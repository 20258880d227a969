import { argumentsForEvents, resultForEvents, type JsonValue } from '../../context';
import {
  replyContent,
  replyToolCalls,
  type LlmPhaseResult,
  type RunEventBody,
  type ToolBatchResult,
  type ToolCallRequest,
} from '../../runtime';
import type { Run } from './run-state';
import { FailureType } from '../../common';

/**
 * Every event the loop logs is built here (spec 7.8 vocabulary, compact fields). The event log lives in
 * workflow memory: large tool results are kept as a preview.
 */

const EVENT_RESULT_CHARS = 1024;
const EVENT_REPLY_CHARS = 16 * 1024;

export function llmCallStart(
  llmCall: number,
  mode: { withTools: boolean; stream: boolean },
  messageCount: number,
): RunEventBody {
  return {
    event_type: 'llm_call_start',
    llm_call: llmCall,
    stream: mode.stream,
    message_count: messageCount,
    with_tools: mode.withTools,
  };
}

export function llmCallEnd(llmCall: number, result: LlmPhaseResult): RunEventBody {
  const content = replyContent(result);
  return {
    event_type: 'llm_call_end',
    llm_call: llmCall,
    outcome: result.outcome,
    // The whole reply is in the transcript; the event keeps up to 16 KB of it.
    ...(content.length <= EVENT_REPLY_CHARS
      ? { content }
      : { content: content.slice(0, EVENT_REPLY_CHARS), content_chars: content.length }),
    tool_calls:
      result.partial_tool_calls ?? replyToolCalls(result).map((call) => ({ id: call.id, name: call.function.name })),
    usage: result.usage,
    duration_ms: result.duration_ms,
    execution_time: seconds(result.duration_ms),
    // What went on the wire (a profile may send plain a call the run asked to stream).
    ...(result.streamed !== undefined ? { streamed: result.streamed } : {}),
  };
}

const seconds = (ms: number) => Math.round(ms) / 1000;

/** The batch's start, then each call's start (spec 7.6). */
export function batchStart(calls: readonly ToolCallRequest[]): RunEventBody[] {
  return [
    {
      event_type: 'tool_calls_batch_start',
      batch_size: calls.length,
      tool_calls: calls.map(({ id, name }) => ({ id, name })),
    },
    ...calls.map((call): RunEventBody => ({
      event_type: 'tool_call_start',
      tool_name: call.name,
      tool_call_id: call.id,
      arguments: argumentsForEvents(call.arguments),
    })),
  ];
}

/**
 * As each call completed: the custom events it emitted, then its end (or error) event; the batch's end
 * last (spec 7.6).
 */
export function batchOutcome(
  calls: readonly ToolCallRequest[],
  batch: ToolBatchResult,
  durationMs: number,
): RunEventBody[] {
  const contents = new Map(
    batch.mutations.flatMap((mutation) =>
      mutation.type === 'ToolResultMutation' ? [[mutation.tool_call_id, mutation.content] as const] : [],
    ),
  );
  const events: RunEventBody[] = [];
  for (const report of batch.reports) {
    for (const custom of batch.custom_events ?? []) {
      if (custom.tool_call_id !== report.tool_call_id) continue;
      events.push({
        event_type: 'custom_event',
        event_name: custom.event_name,
        data: custom.data,
        tool_name: custom.tool_name,
        tool_call_id: custom.tool_call_id,
      });
    }
    const call = {
      tool_name: report.tool_name,
      tool_call_id: report.tool_call_id,
      duration_ms: report.duration_ms,
      execution_time: seconds(report.duration_ms),
    };
    events.push(
      report.success
        ? {
            event_type: 'tool_call_end',
            ...call,
            ...(report.result !== undefined
              ? { result: report.result }
              : eventResult(contents.get(report.tool_call_id) ?? '')),
            success: true,
          }
        : {
            event_type: 'tool_call_error',
            ...call,
            error: report.error ?? '',
            error_message: report.error ?? '',
            error_type: /timed out after/.test(report.error ?? '') ? FailureType.ToolTimeout : FailureType.ToolError,
          },
    );
  }
  const successes = batch.reports.filter((report) => report.success).length;
  events.push({
    event_type: 'tool_calls_batch_end',
    batch_size: calls.length,
    success_count: successes,
    error_count: batch.reports.length - successes,
    cancelled: batch.unfinished,
    total_execution_time: seconds(durationMs),
  });
  return events;
}

export function reactEnd(
  run: Run,
  status: 'completed' | 'aborted' | 'budget_exhausted',
  finalResponse: string,
  iteration: number,
  markAborted: boolean,
): RunEventBody {
  return {
    event_type: 'react_end',
    status,
    final_response: finalResponse,
    total_iterations: iteration,
    total_llm_calls: run.durable.llm_calls,
    total_tool_calls: run.durable.tool_calls,
    total_token_usage: run.durable.usage,
    ...(status === 'aborted' && markAborted ? { aborted: true as const, abort_reason: run.live.abort.reason } : {}),
  };
}

/** Small results whole; for large ones, a preview (the event log lives in workflow memory). */
function eventResult(content: string): { result: JsonValue; result_truncated?: true } {
  if (content.length <= EVENT_RESULT_CHARS) return { result: resultForEvents(content) };
  return { result: content.slice(0, EVENT_RESULT_CHARS), result_truncated: true };
}
