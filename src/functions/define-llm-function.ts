import { z } from 'zod';
import type { JsonObject } from '../context';
import { providerJsonSchema, ConfigurationError } from '../runtime';

export interface LlmFunctionDefinition<Input extends z.ZodObject, Output extends z.ZodType> {
  name: string;
  /** A template over the input's fields: `{field}` is replaced by the value (JSON for non-strings); `{{` and `}}` are literal braces. */
  prompt: string;
  input: Input;
  /** Becomes the provider's structured-output JSON Schema; replies are validated with it. */
  output: Output;
  /** Names of registered tools the function may call. */
  tools?: string[];
  model?: string;
  /** How many times an invalid reply is sent back to the model with the validation error (default 2). */
  maxRepairs?: number;
}

type OutputCheck = { ok: true; value: unknown } | { ok: false; error: string };

/** A typed LLM function: a prompt plus typed inputs and a typed, validated return value (the reference's `llm_function`). */
export interface LlmFunction<Input extends z.ZodObject = z.ZodObject, Output extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly definition: LlmFunctionDefinition<Input, Output>;
  /** The output's JSON Schema, as zod produces it (without `$schema`). */
  readonly outputSchema: JsonObject;
  renderPrompt(args: z.output<Input>): string;
  checkOutput(raw: string): OutputCheck;
}

const PLACEHOLDER = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function defineLlmFunction<Input extends z.ZodObject, Output extends z.ZodType>(
  definition: LlmFunctionDefinition<Input, Output>,
): LlmFunction<Input, Output> {
  const fields = Object.keys(definition.input.shape);
  for (const match of definition.prompt.matchAll(PLACEHOLDER)) {
    if (match[1] !== undefined && !fields.includes(match[1])) {
      throw new ConfigurationError(
        `function '${definition.name}': prompt uses {${match[1]}}, which is not an input field (${fields.join(', ')})`,
      );
    }
  }
  const outputSchema = providerJsonSchema(definition.output);
  return {
    name: definition.name,
    definition,
    outputSchema,
    renderPrompt: (args) =>
      definition.prompt.replace(PLACEHOLDER, (whole, field: string | undefined) => {
        if (whole === '{{') return '{';
        if (whole === '}}') return '}';
        const value = (args as Record<string, unknown>)[field!];
        return typeof value === 'string' ? value : JSON.stringify(value);
      }),
    checkOutput: (raw) => checkOutput(definition.output, raw),
  };
}

/** Parses a reply as JSON (tolerating a ```json fence) and validates it with the output schema. */
function checkOutput(schema: z.ZodType, raw: string): OutputCheck {
  const text = raw.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, '$1');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `the reply is not JSON (${(error as Error).message})` };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    return {
      ok: false,
      error: `the reply does not match the output schema: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`,
    };
  return { ok: true, value: parsed.data };
}
