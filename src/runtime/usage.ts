import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/** Token usage of one LLM call or summed over a run. */
export const TokenUsage = sharedSchema('runtime/usage#TokenUsage', () =>
  z.strictObject({
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    total_tokens: z.number(),
  }),
);
export type TokenUsage = z.infer<typeof TokenUsage>;

/** Field-by-field sum of non-null usages (spec 7.9, deviation 10.d). */
export function addUsage(total: TokenUsage | null, usage: TokenUsage | null | undefined): TokenUsage | null {
  if (!usage) return total;
  if (!total) return { ...usage };
  return {
    prompt_tokens: total.prompt_tokens + usage.prompt_tokens,
    completion_tokens: total.completion_tokens + usage.completion_tokens,
    total_tokens: total.total_tokens + usage.total_tokens,
  };
}
