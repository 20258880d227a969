import { z } from 'zod';
import {
  ConfigurationError,
  GUARDRAIL_STAGES,
  type GuardrailStage,
  type GuardrailSubject,
  type GuardrailVerdict,
} from '../runtime';

/** What a check gets besides its subject. */
export interface GuardrailContext {
  workflowId: string;
  agent: string;
  /** Aborted when the check's activity is cancelled (the run aborted, the worker shutting down). */
  signal: AbortSignal;
}

export interface GuardrailDefinition<Options extends z.ZodType> {
  /** How agents name it (`"guardrails": {"input": [{"guardrail": "<name>"}]}`). */
  name: string;
  description?: string;
  /** The stages it may be listed in; absent: all. A listing in another stage is refused when the worker starts. */
  stages?: readonly GuardrailStage[];
  /** Checks an agent's `options` for it when the worker starts, and types them. */
  options?: Options;
  /**
   * Decides: `{ decision: 'allow' }`, `block` with a reason, `rewrite` with the text that goes on instead
   * (for the `tool` stage: the arguments as JSON text), or `ask` (a person decides). A check that
   * throws, or returns anything else, blocks: a guardrail that fails lets nothing through.
   */
  check(
    subject: GuardrailSubject,
    options: z.output<Options>,
    context: GuardrailContext,
  ): GuardrailVerdict | Promise<GuardrailVerdict>;
}

export interface Guardrail {
  readonly name: string;
  readonly description: string;
  readonly stages: readonly GuardrailStage[];
  readonly options: z.ZodType;
  check(subject: GuardrailSubject, options: unknown, context: GuardrailContext): unknown;
}

const NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

/** A guardrail in code, registered on the worker beside its tools (`createPatchloopWorker({ guardrails })`). */
export function defineGuardrail<Options extends z.ZodType = z.ZodObject<Record<string, never>>>(
  definition: GuardrailDefinition<Options>,
): Guardrail {
  if (!NAME.test(definition.name))
    throw new ConfigurationError(
      `guardrail '${definition.name}': a name is letters, digits, '_', '.' and '-' (at most 64)`,
    );
  const stages = definition.stages ?? GUARDRAIL_STAGES;
  const unknown = stages.filter((stage) => !GUARDRAIL_STAGES.includes(stage));
  if (unknown.length > 0 || stages.length === 0)
    throw new ConfigurationError(
      `guardrail '${definition.name}': stages are ${GUARDRAIL_STAGES.join(', ')}, not ${unknown.join(', ') || 'none'}`,
    );
  return {
    name: definition.name,
    description: definition.description ?? '',
    stages,
    options: definition.options ?? z.strictObject({}),
    check: (subject, options, context) => definition.check(subject, options as z.output<Options>, context),
  };
}
