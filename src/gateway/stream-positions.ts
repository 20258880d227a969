/**
 * Where a protocol's stream event stands, from the run's durable event cursor: event `seq` s owns the
 * positions [s × BLOCK, (s + 1) × BLOCK). What an event tells takes s × BLOCK + a small offset; the text
 * of a model call that starts at event s takes s × BLOCK + TEXT_OFFSET + (characters of its text up to
 * the delta's end). The same run always gives the same positions, whoever reads it and however its
 * tokens were cut, so a stream resumed after position N (by any gateway) sends exactly what comes after
 * N: a delta the reader saw part of is sent from the first character it did not see. The Responses API
 * numbers its events so (`sequence_number`), AG-UI its SSE ids.
 */
export const POSITION_BLOCK = 10_000_000;
const TEXT_OFFSET = 10;
/** The most text one message streams (its block's room): a longer message ends there. */
export const MOST_MESSAGE_CHARS = POSITION_BLOCK - 2 * TEXT_OFFSET;

/** The position of what event `seq` tells at `offset` (0 < offset < TEXT_OFFSET). */
export function positionOf(seq: number, offset: number): number {
  return seq * POSITION_BLOCK + offset;
}

/** The position of a text delta of the call that started at `startSeq`, its text `chars` long with it. */
export function textPosition(startSeq: number, chars: number): number {
  return startSeq * POSITION_BLOCK + TEXT_OFFSET + chars;
}

/**
 * The part of a delta a reader resuming after position `after` has not seen: the delta held the text's
 * characters from `before` on (its call started at `startSeq`); empty when the reader saw all of it.
 */
export function unseenPart(after: number, startSeq: number, before: number, delta: string): string {
  if (textPosition(startSeq, before + delta.length) <= after) return '';
  const seen = Math.min(Math.max(0, after - textPosition(startSeq, before)), delta.length);
  return delta.slice(seen);
}

/** A model call's text as its tokens tell it: what was sent, and the attempt being read with its text so far. */
export interface CallText {
  text: string;
  attempt: number;
  attemptText: string;
}

/**
 * What a token chunk adds to the text sent so far: a retried attempt streams again from its start, and
 * adds only what goes past the sent text; an attempt that answers otherwise adds nothing.
 */
export function addedText(call: CallText, chunk: { attempt: number; chunk: string }): string {
  if (chunk.attempt !== call.attempt) {
    call.attempt = chunk.attempt;
    call.attemptText = '';
  }
  call.attemptText += chunk.chunk;
  return call.attemptText.length > call.text.length && call.attemptText.startsWith(call.text)
    ? call.attemptText.slice(call.text.length)
    : '';
}
