import {
  serializeToolResult,
  toolFailureContent,
  type JsonObject,
  type MultimodalToolResultMutation,
} from '../context';
import { isMultimodalResult } from '../tools/images';
import {
  utf8Bytes,
  type SelfRefIntent,
  type ToolBatchInput,
  type ToolCallReport,
  type ToolCallRequest,
} from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import { describeImages, ImageError, multimodalMutation } from './multimodal-result';
import type { McpProgress, McpServers } from './mcp-connections';
import type { SecretRedactor } from './redact';

/** The limits one call runs under: the agent's, or defaults for an agent this worker does not serve. */
export interface CallLimits {
  timeoutSeconds: number;
  maxResultBytes: number;
  maxImageBytes: number;
}

/** A call that finished: what the model receives, its report, and a SelfRef intent or an image result. */
export interface Finished {
  content: string;
  report: ToolCallReport;
  intent?: SelfRefIntent;
  multimodal?: MultimodalToolResultMutation;
}

/**
 * A call an abort left running that is not known to be repeatable: cancelled like any unfinished call
 * (the spec's marker), its marker and its error event saying it may still take effect (`note`).
 */
export interface StillRunning {
  note: string;
  report: ToolCallReport;
}

/** What became of one call: finished, left running after an abort, or stopped by an abort (null). */
export type CallOutcome = Finished | StillRunning | null;

/** One call of a batch and what it may use. */
export interface CallScope {
  registry: AgentRegistry;
  limits: CallLimits;
  input: ToolBatchInput;
  call: ToolCallRequest;
  workflowId: string;
  batchSignal: AbortSignal;
  /** After the batch's abort, how long a call may still finish and keep its result. */
  graceMs: number;
  redactor: SecretRedactor | undefined;
  mcp: McpServers | undefined;
  progress: (update: McpProgress) => void;
  emit: (eventName: string, data: JsonObject) => void;
  started: number;
  /** The batch activity's attempt: above 1, calls the checkpoint lacks may have run in an earlier one. */
  attempt: number;
}

export function callResult(scope: CallScope, content: string, success = true, error?: string): Finished {
  const { call, started } = scope;
  return {
    content,
    report: {
      tool_call_id: call.id,
      tool_name: call.name,
      success,
      ...(error !== undefined ? { error } : {}),
      duration_ms: Date.now() - started,
    },
  };
}

/** A tool's value as its result: images become a multimodal patch; text above the size limit an error. */
export async function toolOutcome(scope: CallScope, value: unknown, argumentText: string): Promise<Finished> {
  const { call, limits } = scope;
  if (isMultimodalResult(value)) {
    try {
      const multimodal = await multimodalMutation(call, value, limits.maxImageBytes);
      const finished = callResult(scope, '');
      return { ...finished, report: { ...finished.report, result: describeImages(value) }, multimodal };
    } catch (error) {
      if (error instanceof ImageError)
        return callResult(scope, toolFailureContent(call.name, argumentText, error.message));
      throw error;
    }
  }
  return textOutcome(scope, serializeToolResult(value), argumentText);
}

/** A text result, or an error result when it is larger than the agent's `max_tool_result_bytes`. */
export function textOutcome(scope: CallScope, content: string, argumentText: string): Finished {
  const { call, limits } = scope;
  const bytes = utf8Bytes(content);
  if (bytes > limits.maxResultBytes) {
    const reason = `result is too large: ${bytes} bytes (limit ${limits.maxResultBytes})`;
    return callResult(scope, toolFailureContent(call.name, argumentText, reason));
  }
  return callResult(scope, content);
}

/** A call an abort left running: cancelled, its marker and event saying why it may still take effect. */
export function stillRunning(scope: CallScope, note: string): StillRunning {
  return { note, report: callResult(scope, '', false, note).report };
}
