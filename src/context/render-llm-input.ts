import { cloneJson } from './json';
import type { Message } from './messages';
import type { ToolPromptSpec } from './prompt-contract';
import { collapse, removeTaggedBlocks, trim } from './text';

const MUST_PRINCIPLES_START = '<must_principles>';
const MUST_PRINCIPLES_END = '</must_principles>';
const MUST_PRINCIPLES_BLOCK = [
  MUST_PRINCIPLES_START,
  '<rule>Invoke tools through native structured tool_calls / function-calling fields.</rule>',
  '<rule>Use assistant content for natural-language reasoning and final responses.</rule>',
  '<rule>Keep tool invocation payloads in the native tool channel.</rule>',
  MUST_PRINCIPLES_END,
].join('\n');
const TOOL_BLOCK_INSTRUCTION =
  '<instruction>Follow each tool contract and prefer tool-specific best practices.</instruction>';

/**
 * `render_llm_input_messages` (spec 4.4): renders the tool and must-principles blocks into the first
 * system message with string content, or inserts a system message holding only the blocks.
 */
export function renderLlmInputMessages(
  messages: readonly Message[],
  toolPromptSpecs: readonly ToolPromptSpec[],
  includeMustPrinciples: boolean,
  share = false,
): Message[] {
  // Sharing (messages as values), the output keeps the unchanged messages and replaces the system one.
  const output = share ? [...messages] : messages.map(cloneJson);
  if (output.length === 0) return output;
  const render = (base: string) => renderSystemContent(base, toolPromptSpecs, includeMustPrinciples);
  const at = output.findIndex((message) => message['role'] === 'system' && typeof message['content'] === 'string');
  if (at >= 0) output[at] = { ...cloneJson(output[at]!), content: render(output[at]!['content'] as string) };
  else output.unshift({ role: 'system', content: render('') });
  return output;
}

export function renderSystemContent(
  base: string,
  toolPromptSpecs: readonly ToolPromptSpec[],
  includeMustPrinciples: boolean,
): string {
  const sections = [
    renderToolBlock(toolPromptSpecs),
    removeTaggedBlocks(base, MUST_PRINCIPLES_START, MUST_PRINCIPLES_END),
    includeMustPrinciples ? MUST_PRINCIPLES_BLOCK : '',
  ];
  return trim(sections.filter((section) => section !== '').join('\n\n'));
}

function renderToolBlock(specs: readonly ToolPromptSpec[]): string {
  const groups = specs.flatMap((spec) => {
    const group = renderToolGroup(spec);
    return group === null ? [] : [group];
  });
  if (groups.length === 0) return '';
  return ['<tool_best_practices>', TOOL_BLOCK_INSTRUCTION, ...groups, '</tool_best_practices>'].join('\n');
}

function renderToolGroup(spec: ToolPromptSpec): string | null {
  const name = typeof spec.name === 'string' ? trim(spec.name) : '';
  if (name === '') return null;
  const description = typeof spec.description === 'string' ? trim(spec.description) : '';
  const output = [`<tool name="${name}">`];
  if (description !== '') output.push(`<use>${description}</use>`);
  selectBestPractices(spec.best_practices, description).forEach((practice, index) => {
    output.push(`<best_practice index="${index + 1}">${practice}</best_practice>`);
  });
  output.push(...selectInjections(spec.prompt_injections));
  output.push('</tool>');
  return output.join('\n');
}

function dedupeKey(text: string): string {
  return collapse(text.replaceAll('`', '')).toLowerCase().replace(/\.+$/, '');
}

function selectBestPractices(practices: unknown, description: string): string[] {
  if (!Array.isArray(practices)) return [];
  const descriptionKey = dedupeKey(description);
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const entry of practices) {
    if (typeof entry !== 'string' || trim(entry) === '') continue;
    const key = dedupeKey(entry);
    if (key === '' || seen.has(key)) continue;
    if (descriptionKey !== '' && descriptionKey.includes(key)) continue;
    seen.add(key);
    kept.push(trim(entry));
  }
  return kept;
}

function selectInjections(injections: unknown): string[] {
  if (!Array.isArray(injections)) return [];
  const kept: string[] = [];
  for (const entry of injections) {
    if (typeof entry !== 'string') continue;
    const text = trim(entry);
    if (text !== '' && !kept.includes(text)) kept.push(text);
  }
  return kept;
}
