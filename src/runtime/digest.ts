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
  /** SHA-256 of the text, hex. */
  digest: string;
}

/** Stands in for the messages while the rest of the request is serialized; escaped, it cannot clash. */
const MESSAGES_MARK = '\u0000patchloop:messages\u0000';
const MARK_JSON = JSON.stringify(MESSAGES_MARK);

type HashState = ReturnType<typeof sha256.create>;

/**
 * Writes and hashes the requests of one run. Its messages are values (a change replaces a message,
 * see `compileRequestMessages`), so each message's JSON is written once, and when a request starts
 * with the previous one's messages the hash goes on from the state kept at their end: a call costs its
 * new messages, not the whole transcript (the pure-JS hash of the whole text was most of a long run's
 * workflow time). The text is exactly `JSON.stringify(request)`. Held in workflow memory, never in history.
 */
export class RequestWriter {
  private readonly json = new WeakMap<object, string>();
  private last: {
    head: string;
    messages: readonly unknown[];
    parts: string[];
    stable: number;
    state: HashState;
  } | null = null;

  write(request: { messages: readonly unknown[] } & Record<string, unknown>): RequestText {
    const shell = JSON.stringify({ ...request, messages: MESSAGES_MARK });
    const at = shell.indexOf(MARK_JSON);
    if (at < 0 || shell.indexOf(MARK_JSON, at + 1) >= 0) {
      this.last = null;
      const text = JSON.stringify(request);
      return { text, stable: 0, messagesAt: 0, digest: digestText(text) };
    }
    const head = shell.slice(0, at);
    const parts = request.messages.map((message) => this.jsonOf(message));
    const body = parts.join(',');
    const text = head + '[' + body + ']' + shell.slice(at + MARK_JSON.length);
    // The stable prefix ends before the messages' closing bracket: a structural, ASCII boundary.
    const stable = at + 1 + body.length;
    const last = this.last;
    let state: HashState;
    if (last && last.head === head && this.extends(last, request.messages, parts)) {
      state = last.state.clone();
      state.update(encoder.encode(text.slice(last.stable, stable)));
    } else {
      state = sha256.create();
      state.update(encoder.encode(text.slice(0, stable)));
    }
    this.last = { head, messages: [...request.messages], parts, stable, state };
    const digest = bytesToHex(
      state
        .clone()
        .update(encoder.encode(text.slice(stable)))
        .digest(),
    );
    return { text, stable, messagesAt: at, digest };
  }

  private jsonOf(message: unknown): string {
    if (message === null || typeof message !== 'object') return JSON.stringify(message);
    let json = this.json.get(message);
    if (json === undefined) {
      json = JSON.stringify(message);
      this.json.set(message, json);
    }
    return json;
  }

  /** Whether these messages start with the last request's: the same values, or the same JSON. */
  private extends(
    last: { messages: readonly unknown[]; parts: string[] },
    messages: readonly unknown[],
    parts: string[],
  ) {
    if (messages.length < last.messages.length) return false;
    for (let index = 0; index < last.messages.length; index += 1)
      if (messages[index] !== last.messages[index] && parts[index] !== last.parts[index]) return false;
    return true;
  }
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
 * Characters per page of the `compiledRequest` query: well under the 4 MB gRPC limit even in UTF-8, and
 * (in ASCII) under External Storage's 256 KiB threshold, so a page is answered inline, never stored.
 */
export const REQUEST_PAGE_CHARS = 200 * 1024;
