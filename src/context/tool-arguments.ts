import { isPlainObject, type JsonObject } from './json';
import { trim } from './text';

export type RepairedArguments = { ok: true; text: string; value: JsonObject } | { ok: false; text: string };

/**
 * Tool-argument repair (spec 7.6): the first candidate that parses as a JSON object, where the
 * candidates fix doubled outer braces and unclosed strings, brackets and braces. `text` is the repaired
 * string, or the trimmed raw string (`{}` when empty) when nothing parses.
 */
export function repairToolArguments(raw: string): RepairedArguments {
  const trimmed = trim(raw);
  for (const candidate of repairCandidates(trimmed)) {
    const value = parseObject(candidate);
    if (value !== null) return { ok: true, text: candidate, value };
  }
  return { ok: false, text: trimmed === '' ? '{}' : trimmed };
}

/** The repaired argument string a streamed call is stored with (spec 7.4). */
export function repairedArgumentText(raw: string): string {
  return repairToolArguments(raw).text;
}

export function repairCandidates(value: string): string[] {
  if (value === '') return ['{}'];
  const closed = autoClose(value);
  const candidates = [value, ...braceVariants(value), closed, ...braceVariants(closed)];
  return [...new Set(candidates)];
}

function braceVariants(value: string): string[] {
  const leading = value.startsWith('{{');
  const trailing = value.endsWith('}}');
  const variants: string[] = [];
  if (leading) variants.push(value.slice(1));
  if (trailing) variants.push(value.slice(0, -1));
  if (leading && trailing) variants.push(value.slice(1, -1));
  return variants;
}

function autoClose(value: string): string {
  let inString = false;
  let escaped = false;
  let braces = 0;
  let brackets = 0;
  for (const character of value) {
    if (inString) {
      if (escaped) escaped = false;
      else if (character === '\\') escaped = true;
      else if (character === '"') inString = false;
      continue;
    }
    if (character === '"') inString = true;
    else if (character === '{') braces += 1;
    else if (character === '}') braces -= 1;
    else if (character === '[') brackets += 1;
    else if (character === ']') brackets -= 1;
  }
  let closed = value;
  if (inString) closed += '"';
  if (brackets < 0) closed = stripTrailing(closed, ']', -brackets);
  if (braces < 0) closed = stripTrailing(closed, '}', -braces);
  return closed + ']'.repeat(Math.max(brackets, 0)) + '}'.repeat(Math.max(braces, 0));
}

function stripTrailing(value: string, character: string, limit: number): string {
  let end = value.length;
  while (end > 0 && value.length - end < limit && value[end - 1] === character) end -= 1;
  return value.slice(0, end);
}

function parseObject(text: string): JsonObject | null {
  try {
    const value: unknown = JSON.parse(text);
    return isPlainObject(value) ? (value as JsonObject) : null;
  } catch {
    return null;
  }
}

/** Best-effort parsed arguments for events: the repaired object, or `{}`. */
export function argumentsForEvents(raw: string): JsonObject {
  const repaired = repairToolArguments(raw);
  return repaired.ok ? repaired.value : {};
}
