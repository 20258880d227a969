import { z } from 'zod';
import { ContextError } from './errors';
import { collapse, lines, removeTaggedBlocks, trim, whitespacePattern } from './text';
import { sharedSchema } from './shared-schema';

/** A durable experience kept in the system prompt (spec 5.1). */
export const Experience = sharedSchema('context/experiences#Experience', () =>
  z.strictObject({ id: z.string(), text: z.string() }),
);
export type Experience = z.infer<typeof Experience>;

const BLOCK_START = '<experience>';
const BLOCK_END = '</experience>';
const experienceLine = new RegExp(`^-${whitespacePattern}*\\[(?<id>[^\\]]+)\\]${whitespacePattern}+(?<text>.+)$`);

/** Collapses an experience text; the spec's two error messages for non-strings and blanks. */
export function normalizeExperienceText(text: unknown): string {
  if (typeof text !== 'string') throw new ContextError('experience', 'experience text must be a string');
  const normalized = collapse(text);
  if (normalized === '') throw new ContextError('experience', 'experience text must be a non-empty string');
  return normalized;
}

export function renderSystemPromptWithExperiences(basePrompt: string, experiences: readonly Experience[]): string {
  const base = trim(basePrompt);
  if (experiences.length === 0) return base;
  const block = [
    BLOCK_START,
    ...experiences.map((item) => `- [${item.id}] ${normalizeExperienceText(item.text)}`),
    BLOCK_END,
  ].join('\n');
  return base === '' ? block : `${base}\n\n${block}`;
}

export interface SplitPrompt {
  base: string;
  experiences: Experience[];
}

export function splitSystemPromptExperiences(prompt: unknown): SplitPrompt {
  if (typeof prompt !== 'string') return { base: '', experiences: [] };
  const startIndex = prompt.indexOf(BLOCK_START);
  if (startIndex < 0) return { base: trim(prompt), experiences: [] };
  const endIndex = prompt.indexOf(BLOCK_END, startIndex);
  if (endIndex < 0) return { base: removeTaggedBlocks(prompt, BLOCK_START, BLOCK_END), experiences: [] };
  const before = trim(prompt.slice(0, startIndex));
  const after = trim(prompt.slice(endIndex + BLOCK_END.length));
  const inside = trim(prompt.slice(startIndex + BLOCK_START.length, endIndex));
  return {
    base: trim([before, after].filter((part) => part !== '').join('\n\n')),
    experiences: parseExperienceLines(inside),
  };
}

function parseExperienceLines(block: string): Experience[] {
  const experiences: Experience[] = [];
  for (const rawLine of lines(block)) {
    const line = trim(rawLine);
    const match = line === '' ? null : experienceLine.exec(line);
    if (!match?.groups) continue;
    const text = normalizeExperienceText(match.groups['text']);
    const id = trim(match.groups['id']!);
    if (id !== '') experiences.push({ id, text });
  }
  return experiences;
}
