import { ActivityFailure } from '@temporalio/workflow';
import { repairToolArguments, toolFailureContent, toolStepErrorContent, type Mutation } from '../context';
import { cancelledCallMutation, type ToolBatchResult, type ToolCallReport, type ToolCallRequest } from '../runtime';

/** Spec 8.2: an abort before the batch starts runs nothing; every call gets a cancellation result. */
export function cancelledBatch(calls: readonly ToolCallRequest[]): ToolBatchResult {
  return {
    outcome: 'aborted',
    mutations: calls.map((call) => cancelledCallMutation(call)),
    reports: [],
    unfinished: calls.map((call) => call.id),
    intents: [],
  };
}

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

/** A finished call handled by the workflow itself (a fork, a sub-agent call, a handoff). */
export interface WorkflowCallResult {
  call: ToolCallRequest;
  content: string;
  report: ToolCallReport;
}

/** A call the workflow carried out, with this result. */
export function succeededCall(call: ToolCallRequest, content: string, durationMs: number): WorkflowCallResult {
  return {
    call,
    content,
    report: { tool_call_id: call.id, tool_name: call.name, success: true, duration_ms: durationMs },
  };
}

/** A call the workflow could not carry out: the model reads the error as the call's result. */
export function failedCall(
  call: ToolCallRequest,
  message: string,
  durationMs: number,
  argumentText = repairToolArguments(call.arguments).text,
): WorkflowCallResult {
  return {
    call,
    content: toolFailureContent(call.name, argumentText, message),
    report: { tool_call_id: call.id, tool_name: call.name, success: false, error: message, duration_ms: durationMs },
  };
}

/** A batch's mutations for each call id, in order: a provider may repeat an id within one batch. */
export function mutationsByCallId(mutations: readonly Mutation[]): Map<string, Mutation[]> {
  const byId = new Map<string, Mutation[]>();
  for (const mutation of mutations) {
    if (!('tool_call_id' in mutation)) continue;
    byId.set(mutation.tool_call_id, [...(byId.get(mutation.tool_call_id) ?? []), mutation]);
  }
  return byId;
}

/**
 * Merges the activity's batch with calls the workflow ran itself, back into the declared order of the
 * whole batch: plain results and cancellations first, multimodal results last (spec 7.6, 10.c).
 * Calls without a result are cancelled (with the activity's note, when it left one running that may
 * still take effect). `reports` are already in completion order.
 */
export function mergeBatches(
  calls: readonly ToolCallRequest[],
  activity: ToolBatchResult,
  own: readonly WorkflowCallResult[],
  reports: ToolCallReport[],
): ToolBatchResult {
  const byId = mutationsByCallId(
    activity.mutations.filter(
      (mutation) =>
        mutation.type === 'ToolResultMutation' ||
        mutation.type === 'MultimodalToolResultMutation' ||
        mutation.type === 'ToolCancelledMutation',
    ),
  );
  // The workflow's own results belong to the very call they answer (ids may repeat within a batch).
  const ownByCall = new Map(own.map((result) => [result.call, result]));
  const plain: Mutation[] = [];
  const multimodal: Mutation[] = [];
  const unfinished: string[] = [];
  for (const call of calls) {
    const mine = ownByCall.get(call);
    const mutation: Mutation = mine
      ? { type: 'ToolResultMutation', tool_call_id: call.id, content: mine.content }
      : (byId.get(call.id)?.shift() ?? cancelledCallMutation(call));
    if (mutation.type === 'ToolCancelledMutation') unfinished.push(call.id);
    (mutation.type === 'MultimodalToolResultMutation' ? multimodal : plain).push(mutation);
  }
  return {
    outcome: activity.outcome === 'aborted' || unfinished.length > 0 ? 'aborted' : 'completed',
    mutations: [...plain, ...multimodal],
    reports,
    unfinished,
    // Results recorded by workers older than SelfRef carry no intents.
    intents: activity.intents ?? [],
    ...(activity.custom_events ? { custom_events: activity.custom_events } : {}),
  };
}

export const EMPTY_BATCH: ToolBatchResult = {
  outcome: 'completed',
  mutations: [],
  reports: [],
  unfinished: [],
  intents: [],
};
