import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/** Token usage of one LLM call or summed over a run. */
export const TokenUsage = sharedSchema('runtime/usage#TokenUsage', () =>
  z.strictObject({
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    total_tokens: z.number(),
    /** Of `prompt_tokens`, those the provider served from its prompt cache (when it says). */
    cached_prompt_tokens: z.number().optional(),
    /**
     * The server sent no usage: counted from the characters at 1 token per 3 (`CHARS_PER_TOKEN`), so
     * budgets and context decisions still work. A sum is estimated when any part of it was.
     */
    estimated: z.literal(true).optional(),
  }),
);
export type TokenUsage = z.infer<typeof TokenUsage>;

/** Field-by-field sum of non-null usages (spec 7.9, deviation 10.d). */
export function addUsage(total: TokenUsage | null, usage: TokenUsage | null | undefined): TokenUsage | null {
  if (!usage) return total;
  if (!total) return { ...usage };
  const cached =
    total.cached_prompt_tokens !== undefined || usage.cached_prompt_tokens !== undefined
      ? { cached_prompt_tokens: (total.cached_prompt_tokens ?? 0) + (usage.cached_prompt_tokens ?? 0) }
      : {};
  return {
    prompt_tokens: total.prompt_tokens + usage.prompt_tokens,
    completion_tokens: total.completion_tokens + usage.completion_tokens,
    total_tokens: total.total_tokens + usage.total_tokens,
    ...cached,
    ...(total.estimated || usage.estimated ? { estimated: true as const } : {}),
  };
}

/** Usage counted from characters, for a reply whose server sent none (`estimated`). */
export function estimatedUsage(promptChars: number, completionChars: number, charsPerToken: number): TokenUsage {
  const prompt = Math.ceil(promptChars / charsPerToken);
  const completion = Math.ceil(completionChars / charsPerToken);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, estimated: true };
}

/** A provider's `usage` object (chat completions, streamed or not) as patchloop records it. */
export function providerUsage(raw: {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
}): TokenUsage {
  const cached = raw.prompt_tokens_details?.cached_tokens;
  return {
    prompt_tokens: raw.prompt_tokens,
    completion_tokens: raw.completion_tokens,
    total_tokens: raw.total_tokens,
    ...(typeof cached === 'number' && cached > 0 ? { cached_prompt_tokens: cached } : {}),
  };
}

/** The Responses API's `usage` (input and output tokens) as patchloop records it. */
export function responsesUsage(raw: {
  input_tokens: number;
  output_tokens: number;
  total_tokens?: number | null;
  input_tokens_details?: { cached_tokens?: number | null } | null;
}): TokenUsage {
  return providerUsage({
    prompt_tokens: raw.input_tokens,
    completion_tokens: raw.output_tokens,
    total_tokens: raw.total_tokens ?? raw.input_tokens + raw.output_tokens,
    prompt_tokens_details: raw.input_tokens_details ?? null,
  });
}
