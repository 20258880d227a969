import type { ToolPromptSpec } from './prompt-contract';
import { compareCodePoints, trim } from './text';

/** What the prompt needs to know about one tool (spec 4.5). */
export interface ToolPromptSource {
  name: string;
  description?: string;
  best_practices?: readonly string[];
  /** Output of the tool's prompt-injection hook. */
  prompt_injection?: string;
}

/**
 * Builds the contract's `tool_prompt_specs` from a run's tools (spec 4.5): trimmed, empty entries and
 * exact duplicates removed, same-name tools merged (first non-empty description wins), sorted by name.
 */
export function buildToolPromptSpecs(tools: readonly ToolPromptSource[]): ToolPromptSpec[] {
  const merged = new Map<
    string,
    { name: string; description: string; best_practices: string[]; prompt_injections: string[] }
  >();
  for (const tool of tools) {
    const name = trim(tool.name);
    if (name === '') continue;
    const entry = merged.get(name) ?? { name, description: '', best_practices: [], prompt_injections: [] };
    merged.set(name, entry);
    const description = trim(tool.description ?? '');
    if (entry.description === '' && description !== '') entry.description = description;
    for (const practice of tool.best_practices ?? []) addUnique(entry.best_practices, trim(practice));
    addUnique(entry.prompt_injections, trim(tool.prompt_injection ?? ''));
  }
  return [...merged.values()].sort((left, right) => compareCodePoints(left.name, right.name));
}

function addUnique(list: string[], value: string): void {
  if (value !== '' && !list.includes(value)) list.push(value);
}
