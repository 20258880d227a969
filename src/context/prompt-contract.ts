import { z } from 'zod';
import { JsonValue } from './json';
import { sharedSchema } from './shared-schema';

/**
 * Input of the tool block (spec 2.3). Every key is optional on the wire and values are not checked:
 * the renderer skips what it cannot use (spec 4.4), exactly like the reference.
 */
export const ToolPromptSpec = sharedSchema('context/prompt-contract#ToolPromptSpec', () =>
  z.looseObject({
    name: JsonValue.optional(),
    description: JsonValue.optional(),
    best_practices: JsonValue.optional(),
    prompt_injections: JsonValue.optional(),
  }),
);
export type ToolPromptSpec = z.infer<typeof ToolPromptSpec>;

/** How the system prompt is chosen and which blocks are injected (spec 2.3). */
export const PromptContract = sharedSchema('context/prompt-contract#PromptContract', () =>
  z.object({
    base_instruction: z.string().default(''),
    system_prompt: z.string().nullable().default(null),
    tool_prompt_specs: z.array(ToolPromptSpec).default([]),
    include_must_principles: z.boolean().default(false),
  }),
);
export type PromptContract = z.infer<typeof PromptContract>;
export type PromptContractInput = z.input<typeof PromptContract>;
