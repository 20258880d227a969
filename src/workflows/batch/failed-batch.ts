import { ActivityFailure } from '@temporalio/workflow';
import { toolStepErrorContent } from '../../context';
import type { ToolBatchResult, ToolCallRequest } from '../../runtime';

/** Spec 7.6, failure of the step itself: the model sees the error and the run goes on. */
export function failedBatch(calls: readonly ToolCallRequest[], error: unknown): ToolBatchResult {
  const message =
    error instanceof ActivityFailure && error.cause
      ? error.cause.message
      : error instanceof Error
        ? error.message
        : String(error);
  return {
    outcome: 'completed',
    mutations: calls.map((call) => ({
      type: 'ToolResultMutation',
      tool_call_id: call.id,
      content: toolStepErrorContent(message),
    })),
    reports: calls.map((call) => ({
      tool_call_id: call.id,
      tool_name: call.name,
      success: false,
      error: message,
      duration_ms: 0,
    })),
    unfinished: [],
    intents: [],
  };
}
