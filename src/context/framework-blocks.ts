import { removeTaggedBlocks, trim } from './text';

/** Blocks the framework injects into system prompts; SelfRef reads prompts without them (spec 5.2). */
const FRAMEWORK_BLOCKS: ReadonlyArray<readonly [string, string]> = [
  ['<tool_best_practices>', '</tool_best_practices>'],
  ['<runtime_primitive_contract>', '</runtime_primitive_contract>'],
  ['[SelfReference Memory Contract]', '[/SelfReference Memory Contract]'],
  ['<must_principles>', '</must_principles>'],
];

export function removeFrameworkBlocks(prompt: string): string {
  let cleaned = prompt;
  for (const [start, end] of FRAMEWORK_BLOCKS) cleaned = removeTaggedBlocks(cleaned, start, end);
  return trim(cleaned);
}
