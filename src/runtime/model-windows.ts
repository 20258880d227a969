/**
 * Context windows of well-known models, in tokens, as their providers documented them (checked
 * 2026-12). A run of a model listed here compacts before it outgrows the window even when its agent
 * sets no `context.window_tokens`; `PATCHLOOP_MODEL_WINDOWS` (`model=tokens,...`) adds or corrects
 * entries on a worker, and an agent's own setting wins over both. A model in none of them is left to
 * the reactive path (the provider's `context_length_exceeded`), which then learns its window.
 */
export const MODEL_WINDOWS: Readonly<Record<string, number>> = {
  'gpt-3.5-turbo': 16_385,
  'gpt-4': 8_192,
  'gpt-4-turbo': 128_000,
  'gpt-4o': 128_000,
  'gpt-4o-mini': 128_000,
  'gpt-4.1': 1_047_576,
  'gpt-4.1-mini': 1_047_576,
  'gpt-4.1-nano': 1_047_576,
  'gpt-5': 400_000,
  'gpt-5-mini': 400_000,
  'gpt-5-nano': 400_000,
  o1: 200_000,
  o3: 200_000,
  'o3-mini': 200_000,
  'o4-mini': 200_000,
  'claude-3-5-sonnet': 200_000,
  'claude-3-5-haiku': 200_000,
  'claude-3-7-sonnet': 200_000,
  'claude-sonnet-4': 200_000,
  'claude-opus-4': 200_000,
  'gemini-1.5-pro': 2_097_152,
  'gemini-1.5-flash': 1_048_576,
  'gemini-2.0-flash': 1_048_576,
  'gemini-2.5-pro': 1_048_576,
  'gemini-2.5-flash': 1_048_576,
};

/**
 * The window of `model` from these tables (later ones win): the entry of the model's own name, or of
 * the longest listed name it extends with a `-` suffix (a dated snapshot such as `gpt-4o-2024-08-06`).
 * A router's vendor prefix (`openai/gpt-4o`) is ignored. Null when no entry matches.
 */
export function modelWindow(model: string, ...tables: ReadonlyArray<Readonly<Record<string, number>>>): number | null {
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  for (const table of [...tables].reverse()) {
    let best: string | undefined;
    for (const key of Object.keys(table)) {
      const listed = key.toLowerCase();
      const matches = name === listed || name.startsWith(`${listed}-`);
      if (matches && (best === undefined || listed.length > best.length)) best = key;
    }
    if (best !== undefined) return table[best]!;
  }
  return null;
}
