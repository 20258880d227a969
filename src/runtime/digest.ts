import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex } from '@noble/hashes/utils';

const encoder = new TextEncoder();

/** SHA-256 of a string's UTF-8 bytes, hex. Pure JS: runs in the workflow sandbox and in activities alike. */
export function digestText(text: string): string {
  return bytesToHex(sha256(encoder.encode(text)));
}

/**
 * A compiled request's JSON text with the length of its stable prefix: everything up to the end of its
 * last message. Between calls the transcript only grows, so the next request's text usually starts
 * with this prefix, and hashing (here) and transferring (to the activity) can start where it ends.
 */
export interface RequestText {
  text: string;
  stable: number;
  /** Where the messages array starts (its `[`); with `stable`, the rest of the request parses alone. */
  messagesAt: number;
}

/** Stands in for the messages while the rest of the request is serialized; escaped, it cannot clash. */
const MESSAGES_MARK = '\u0000patchloop:messages\u0000';

/** `JSON.stringify(request)`, exactly, with the stable prefix's length (0 when it cannot be found). */
export function requestText(request: { messages: readonly unknown[] } & Record<string, unknown>): RequestText {
  const shell = JSON.stringify({ ...request, messages: MESSAGES_MARK });
  const mark = JSON.stringify(MESSAGES_MARK);
  const at = shell.indexOf(mark);
  if (at < 0 || shell.indexOf(mark, at + 1) >= 0) return { text: JSON.stringify(request), stable: 0, messagesAt: 0 };
  const messages = JSON.stringify(request.messages);
  // The stable prefix ends before the messages' closing bracket: a structural, ASCII boundary.
  return {
    text: shell.slice(0, at) + messages + shell.slice(at + mark.length),
    stable: at + messages.length - 1,
    messagesAt: at,
  };
}

/**
 * The request without its messages (`messages: []`), parsed from its text without parsing the messages:
 * what the LLM activity needs besides the text it sends as it is. Null when the text has no known layout.
 */
export function requestFields(text: string, stable: number, messagesAt: number): Record<string, unknown> | null {
  if (stable <= messagesAt || text[messagesAt] !== '[' || text[stable] !== ']') return null;
  return JSON.parse(text.slice(0, messagesAt) + '[]' + text.slice(stable + 1)) as Record<string, unknown>;
}

/**
 * SHA-256 of request texts that mostly extend the previous one: the hash state at the end of the last
 * stable prefix is kept, so a digest costs the new part only (the pure-JS hash was most of a long run's
 * workflow time). Gives exactly `digestText(text)`. Held in workflow memory, never in history.
 */
export class RequestDigest {
  private prefix = '';
  private state = sha256.create();

  digest({ text, stable }: RequestText): string {
    const prefix = text.slice(0, stable);
    let state: ReturnType<typeof sha256.create>;
    if (this.prefix.length > 0 && prefix.startsWith(this.prefix)) {
      state = this.state.clone();
      state.update(encoder.encode(prefix.slice(this.prefix.length)));
    } else {
      state = sha256.create();
      state.update(encoder.encode(prefix));
    }
    this.prefix = prefix;
    this.state = state;
    return bytesToHex(
      state
        .clone()
        .update(encoder.encode(text.slice(stable)))
        .digest(),
    );
  }
}

/**
 * Characters per page of the `compiledRequest` query: well under the 4 MB gRPC limit even in UTF-8, and
 * (in ASCII) under External Storage's 256 KiB threshold, so a page is answered inline, never stored.
 */
export const REQUEST_PAGE_CHARS = 200 * 1024;
