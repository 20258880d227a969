import { z } from 'zod';
import { ContextError } from './errors';
import { lines, trim } from './text';
import { sharedSchema } from './shared-schema';

/** The seven-field compaction payload (spec 5.3). */
export const SummaryPayload = sharedSchema('context/summary#SummaryPayload', () =>
  z.strictObject({
    goal: z.string(),
    instruction: z.string(),
    discoveries: z.array(z.string()),
    completed: z.array(z.string()),
    current_status: z.string(),
    likely_next_work: z.array(z.string()),
    relevant_files_directories: z.array(z.string()),
  }),
);
export type SummaryPayload = z.infer<typeof SummaryPayload>;

type TextField = 'goal' | 'instruction' | 'current_status';
type ListField = 'discoveries' | 'completed' | 'likely_next_work' | 'relevant_files_directories';

const SECTIONS: ReadonlyArray<readonly [keyof SummaryPayload, string]> = [
  ['goal', 'Goal'],
  ['instruction', 'Instruction'],
  ['discoveries', 'Discoveries'],
  ['completed', 'Completed'],
  ['current_status', 'Current Status'],
  ['likely_next_work', 'Likely next work'],
  ['relevant_files_directories', 'Relevant files/directories'],
];
const TEXT_FIELDS: readonly TextField[] = ['goal', 'instruction', 'current_status'];
const LIST_FIELDS: readonly ListField[] = [
  'discoveries',
  'completed',
  'likely_next_work',
  'relevant_files_directories',
];
const FIELD_BY_TITLE = new Map(SECTIONS.map(([field, title]) => [title, field]));
const isListField = (field: keyof SummaryPayload): field is ListField =>
  (LIST_FIELDS as readonly string[]).includes(field);

const START = '<context_compaction_summary>';
const END = '</context_compaction_summary>';

/** Validates and trims a payload; throws the first failure in the spec's field order. */
export function normalizeSummary(payload: Record<string, unknown>): SummaryPayload {
  const normalized: Partial<Record<keyof SummaryPayload, string | string[]>> = {};
  for (const field of TEXT_FIELDS) {
    const value = payload[field];
    if (typeof value !== 'string') throw new ContextError('summary', `${field} must be a string`);
    const text = trim(value);
    if (text === '') throw new ContextError('summary', `${field} must be a non-empty string`);
    normalized[field] = text;
  }
  for (const field of LIST_FIELDS) {
    const value = payload[field];
    if (!Array.isArray(value)) throw new ContextError('summary', `${field} must be a list[str]`);
    normalized[field] = value.flatMap((item: unknown, index) => {
      if (typeof item !== 'string') throw new ContextError('summary', `${field}[${index}] must be a string`);
      const text = trim(item);
      return text === '' ? [] : [text];
    });
  }
  return normalized as SummaryPayload;
}

export function renderSummary(payload: SummaryPayload): string {
  const output = [START];
  for (const [field, title] of SECTIONS) {
    output.push(`## ${title}`);
    const value = payload[field];
    if (typeof value === 'string') output.push(value);
    else output.push(...value.map((item) => `- ${item}`));
    output.push('');
  }
  while (output[output.length - 1] === '') output.pop();
  output.push(END);
  return output.join('\n');
}

/** The payload a message content holds, or null when it is not a (valid) summary. */
export function parseSummary(content: unknown): SummaryPayload | null {
  if (typeof content !== 'string') return null;
  const text = trim(content);
  if (!text.startsWith(START) || !text.endsWith(END)) return null;
  const sections = new Map<keyof SummaryPayload, string[]>();
  let current: string[] | null = null;
  for (const rawLine of lines(trim(text.slice(START.length, text.length - END.length)))) {
    const line = trim(rawLine);
    if (line === '') continue;
    if (line.startsWith('## ')) {
      const field = FIELD_BY_TITLE.get(trim(line.slice(3)));
      current = field === undefined ? null : [];
      if (field !== undefined) sections.set(field, current!);
      continue;
    }
    current?.push(line);
  }
  if (sections.size !== SECTIONS.length) return null;
  const payload: Record<string, unknown> = {};
  for (const [field, collected] of sections) {
    payload[field] = isListField(field)
      ? collected
          .filter((line) => line.startsWith('- ') && trim(line.slice(2)) !== '')
          .map((line) => trim(line.slice(2)))
      : trim(collected.join('\n'));
  }
  try {
    return normalizeSummary(payload);
  } catch (error) {
    if (error instanceof ContextError) return null;
    throw error;
  }
}
