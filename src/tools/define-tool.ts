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

export interface ToolDefinition<Parameters extends z.ZodType> {
  name: string;
  description: string;
  /** Arguments are validated with this schema; the model gets the JSON Schema zod produces from it. */
  parameters: Parameters;
  execute: (args: z.output<Parameters>, context: ToolContext) => unknown;
  bestPractices?: string[];
  promptInjection?: string;
  timeoutSeconds?: number;
}

export interface Tool {
  readonly name: string;
  readonly descriptor: ToolDescriptor;
  readonly parameters: z.ZodType;
  execute(args: unknown, context: ToolContext): unknown;
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
  };
}
