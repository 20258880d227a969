import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex } from '@noble/hashes/utils';

/** SHA-256 of a string's UTF-8 bytes, hex. Pure JS: runs in the workflow sandbox and in activities alike. */
export function digestText(text: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(text)));
}

/**
 * Characters per page of the `compiledRequest` query: well under the 4 MB gRPC limit even in UTF-8, and
 * (in ASCII) under External Storage's 256 KiB threshold, so a page is answered inline, never stored.
 */
export const REQUEST_PAGE_CHARS = 200 * 1024;
