import { type z } from 'zod';
import type { JsonObject } from '../context';
import { providerJsonSchema, type ToolDescriptor } from '../runtime';

/** What a running tool gets besides its arguments. */
export interface ToolContext {
  /** Aborted when the run is aborted, the tool's timeout passes, or the worker shuts down. */
  signal: AbortSignal;
  /**
   * `<workflowId>/<firstExecutionRunId>/<iteration>/<toolCallId>`: stable across retries, crashes,
   * replays and continue-as-new, and unique per run chain (a new run that reuses the workflow id gets
   * new keys), so a side-effecting tool can recognise a repeated attempt.
   */
  idempotencyKey: string;
  toolCallId: string;
  workflowId: string;
  iteration: number;
  /** A custom event for the run's event log (`custom_event`), emitted when the call completes. */
  emit(eventName: string, data?: JsonObject): void;
}

/** What a `needsApproval` predicate gets besides the validated arguments. */
export interface ApprovalContext {
  toolCallId: string;
  workflowId: string;
  iteration: number;
}

/** Whether a call waits for a person: always, or decided per call from its (validated) arguments. */
export type NeedsApproval<Args> = boolean | ((args: Args, context: ApprovalContext) => boolean | Promise<boolean>);

export interface ToolDefinition<Parameters extends z.ZodType> {
  name: string;
  description: string;
  /** Arguments are validated with this schema; the model gets the JSON Schema zod produces from it. */
  parameters: Parameters;
  execute: (args: z.output<Parameters>, context: ToolContext) => unknown;
  bestPractices?: string[];
  promptInjection?: string;
  timeoutSeconds?: number;
  /**
   * Calls wait for an `approve` decision before they run (arguments are repaired and validated first,
   * so nobody approves a call that would fail). A function decides per call; if it throws, the call
   * waits for a person.
   */
  needsApproval?: NeedsApproval<z.output<Parameters>>;
}

export interface Tool {
  readonly name: string;
  readonly descriptor: ToolDescriptor;
  readonly parameters: z.ZodType;
  execute(args: unknown, context: ToolContext): unknown;
  /** Absent or false: calls run without a decision (unless the agent lists the tool in `needs_approval`). */
  readonly needsApproval?: NeedsApproval<unknown>;
}

export function defineTool<Parameters extends z.ZodType>(definition: ToolDefinition<Parameters>): Tool {
  return {
    name: definition.name,
    parameters: definition.parameters,
    descriptor: {
      name: definition.name,
      description: definition.description,
      parameters: providerJsonSchema(definition.parameters),
      best_practices: definition.bestPractices ?? [],
      ...(definition.promptInjection !== undefined ? { prompt_injection: definition.promptInjection } : {}),
      ...(definition.timeoutSeconds !== undefined ? { timeout_seconds: definition.timeoutSeconds } : {}),
    },
    execute: (args, context) => definition.execute(args as z.output<Parameters>, context),
    ...(definition.needsApproval !== undefined
      ? { needsApproval: definition.needsApproval as NeedsApproval<unknown> }
      : {}),
  };
}
