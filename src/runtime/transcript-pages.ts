import { utf8Bytes } from './user-message';

/** Argument of the `transcriptPage` query. */
export interface TranscriptPageInput {
  /** Where the page starts in the transcript's JSON text: 0, then the previous page's `next_offset`. */
  offset?: number;
  /** At most this many bytes of page (default and ceiling: what travels inline; floor 4 KiB). */
  max_bytes?: number;
}

/**
 * One page of the transcript's JSON text (`JSON.stringify` of the messages). Joined in order, the
 * pages' `text` is that JSON; its SHA-256 is `digest`, the same on every page while the transcript
 * stays the same (a page with another digest means the run changed it meanwhile: read from 0 again).
 * Offsets count UTF-16 code units; pass `next_offset` back as it is.
 */
export interface TranscriptPage {
  text: string;
  offset: number;
  next_offset: number;
  total_chars: number;
  done: boolean;
  /** Messages in the whole transcript. */
  messages: number;
  digest: string;
}

const MIN_TRANSCRIPT_PAGE_BYTES = 4096;
/** What a page adds to its text: the other fields and their names. */
const PAGE_FIELDS_BYTES = 512;

/** The page's byte limit: the caller's `max_bytes` within 4 KiB and `ceiling`. */
export function transcriptPageBytes(requested: unknown, ceiling: number): number {
  const most = Math.max(MIN_TRANSCRIPT_PAGE_BYTES, ceiling);
  if (typeof requested !== 'number' || !Number.isFinite(requested)) return most;
  return Math.min(most, Math.max(MIN_TRANSCRIPT_PAGE_BYTES, Math.floor(requested)));
}

/**
 * Where the page of `text` starting at `offset` ends: as far as its JSON (the text escaped and
 * quoted, then UTF-8) stays within `maxBytes` with the page's other fields, never between the two
 * halves of a surrogate pair (a client joining pages as code points would break the character).
 */
export function transcriptPageEnd(text: string, offset: number, maxBytes: number): number {
  const budget = Math.max(64, maxBytes - PAGE_FIELDS_BYTES);
  // Each character takes at least one byte: no page is longer than its byte budget.
  let end = Math.min(text.length, offset + budget);
  for (;;) {
    if (end < text.length && end > offset + 1 && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
    const bytes = utf8Bytes(JSON.stringify(text.slice(offset, end)));
    if (bytes <= budget || end - offset <= 1) return end;
    // Shrink in proportion (escapes and multi-byte characters spread unevenly: measure again).
    end = offset + Math.max(1, Math.min(end - offset - 1, Math.floor(((end - offset) * budget) / bytes)));
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
