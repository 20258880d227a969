import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/** What a compaction may do to a context, in the order it tries them. */
const COMPACTION_STEPS = ['clear_tool_results', 'summarize'] as const;

const windowTokens = () => z.number().int().positive();
const compactAt = () => z.number().gt(0).lt(1);
const keepRecent = () => z.number().int().positive();
const strategy = () => z.array(z.enum(COMPACTION_STEPS)).min(1);

/**
 * How a run keeps its context inside the model's window (`context` in an agent definition, overridable
 * per run and per session). With a window known (set here, from PATCHLOOP_MODEL_WINDOWS, from the table
 * of well-known models, or learned from the provider's error), the run compacts before a call whose
 * request would pass `compact_at` of it (proactive); with none, it compacts when the provider answers
 * `context_length_exceeded` (reactive).
 */
export const ContextSettings = sharedSchema('runtime/context-settings#ContextSettings', () =>
  z.strictObject({
    window_tokens: windowTokens()
      .nullable()
      .default(null)
      .describe("The model's context window in tokens; null: from PATCHLOOP_MODEL_WINDOWS or the model table."),
    compact_at: compactAt()
      .default(0.8)
      .describe('Fraction of the window a request may reach before the run compacts first.'),
    keep_recent_tokens: keepRecent()
      .nullable()
      .default(null)
      .describe('The newest messages kept verbatim by a compaction, in tokens; null: a quarter of the window.'),
    strategy: strategy()
      // A function: zod copies a default only shallowly.
      .default(() => [...COMPACTION_STEPS])
      .describe('What a compaction does, in order: clear old tool results (keeping a stub), then summarize.'),
  }),
);
export type ContextSettings = z.infer<typeof ContextSettings>;

/** A run's or session's override of its agent's settings: only the fields it names. */
export const ContextOverride = sharedSchema('runtime/context-settings#ContextOverride', () =>
  z.strictObject({
    window_tokens: windowTokens().nullable().optional(),
    compact_at: compactAt().optional(),
    keep_recent_tokens: keepRecent().nullable().optional(),
    strategy: strategy().optional(),
  }),
);
export type ContextOverride = z.infer<typeof ContextOverride>;

/** The settings a run uses: its agent's, with its own override on top (check them with `contextProblem`). */
export function effectiveContext(agent: ContextSettings, override?: ContextOverride | null): ContextSettings {
  return withOverride(agent, override);
}

/** Settings with a run's override on top: the fields it names (undefined names none). */
export function withOverride<T extends object>(base: T, override: Partial<T> | null | undefined): T {
  const merged = { ...base };
  for (const [key, value] of Object.entries(override ?? {}))
    if (value !== undefined) Object.assign(merged, { [key]: value });
  return merged;
}

/** The rule zod cannot state field by field, as a message naming the fields; null when the settings hold. */
export function contextProblem(settings: ContextSettings): string | null {
  const { window_tokens: window, keep_recent_tokens: tail } = settings;
  if (window !== null && tail !== null && tail >= window)
    return `context.keep_recent_tokens (${tail}) must be smaller than context.window_tokens (${window}): the tail kept verbatim has to leave room for the rest`;
  return null;
}

/** The tail a compaction keeps verbatim: the setting, or a quarter of the window. */
export function keepRecentTokens(settings: ContextSettings, window: number): number {
  return Math.min(settings.keep_recent_tokens ?? Math.floor(window / 4), window - 1);
}
