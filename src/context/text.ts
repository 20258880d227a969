/**
 * Text primitives with the reference's (Python's) character sets. JavaScript's
 * `trim()` and `\s` use a different whitespace set (spec 1.3, Appendix B).
 */

const WHITESPACE_CLASS = '\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

export const whitespacePattern = `[${WHITESPACE_CLASS}]`;

const leadingWhitespace = new RegExp(`^[${WHITESPACE_CLASS}]+`);
const trailingWhitespace = new RegExp(`[${WHITESPACE_CLASS}]+$`);
const whitespaceRun = new RegExp(`[${WHITESPACE_CLASS}]+`);
// eslint-disable-next-line no-control-regex -- Python line boundaries include these control characters
const lineBoundary = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

export function trim(text: string): string {
  return text.replace(leadingWhitespace, '').replace(trailingWhitespace, '');
}

export function collapse(text: string): string {
  return text
    .split(whitespaceRun)
    .filter((piece) => piece !== '')
    .join(' ');
}

/** Python's `str.splitlines()`: a trailing line break adds no empty line. */
export function lines(text: string): string[] {
  const pieces = text.split(lineBoundary);
  if (pieces[pieces.length - 1] === '') pieces.pop();
  return pieces;
}

/** Removes every `start … end` block; an unterminated block is cut to the end. Result trimmed. */
export function removeTaggedBlocks(text: string, start: string, end: string): string {
  let cleaned = text;
  for (;;) {
    const startIndex = cleaned.indexOf(start);
    if (startIndex < 0) break;
    const endIndex = cleaned.indexOf(end, startIndex);
    if (endIndex < 0) {
      cleaned = cleaned.slice(0, startIndex);
      break;
    }
    cleaned = cleaned.slice(0, startIndex) + cleaned.slice(endIndex + end.length);
  }
  return trim(cleaned);
}

/** Compares by code point, not UTF-16 unit (spec Appendix B, sorting). */
export function compareCodePoints(left: string, right: string): number {
  const a = Array.from(left);
  const b = Array.from(right);
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    const difference = a[index]!.codePointAt(0)! - b[index]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}

const decimalDigit = /\p{Nd}/u;

function digitValue(character: string): number {
  // Unicode decimal digits come in contiguous runs of ten starting at zero.
  let start = character.codePointAt(0)!;
  while (decimalDigit.test(String.fromCodePoint(start - 1))) start -= 1;
  return (character.codePointAt(0)! - start) % 10;
}

const integerLiteral = new RegExp(`^[${WHITESPACE_CLASS}]*([+-]?)(\\p{Nd}+(?:_\\p{Nd}+)*)[${WHITESPACE_CLASS}]*$`, 'u');

/** Python's `int(text)` for base 10, or null where it would raise. Unbounded (BigInt). */
export function parsePythonInteger(text: string): bigint | null {
  const match = integerLiteral.exec(text);
  if (!match) return null;
  const digits = Array.from(match[2]!.replaceAll('_', ''), digitValue).join('');
  const value = BigInt(digits);
  return match[1] === '-' ? -value : value;
}
