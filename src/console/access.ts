import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopbackAddress, isLoopbackHost } from '../config/loopback';

/**
 * Who may do what in the console. Reading pages needs nothing when the console listens on a loopback
 * address and the request comes from this machine under a loopback name; anything else (another bind
 * address, a request from elsewhere) needs the token, and so does every action, always. An action is a
 * POST with a JSON body whose cookie-borne session also shows a same-origin `Origin`, so another site
 * cannot make a signed-in browser act (its form cannot send JSON, its script gets no CORS answer).
 */
export interface ConsoleAccess {
  /** `PATCHLOOP_CONSOLE_TOKEN`, or one made up at start (printed as a sign-in link). */
  token: string;
  /** The console listens on a loopback address only. */
  loopbackBind: boolean;
}

export const SESSION_COOKIE = 'patchloop_console';

/** What a refused request gets: its status and a sentence. */
export class AccessRefused extends Error {
  constructor(
    readonly status: 401 | 403 | 405 | 415 | 421,
    message: string,
  ) {
    super(message);
  }
}

/** The cookie value of a signed-in browser: derived from the token, never the token itself. */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('patchloop console session v1').digest('base64url');
}

function same(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function cookieOf(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** How the request shows the token: a bearer header (programs), the session cookie (browsers), or not at all. */
export function credentialOf(request: IncomingMessage, access: ConsoleAccess): 'bearer' | 'cookie' | null {
  const header = request.headers.authorization;
  if (header?.startsWith('Bearer ') && same(header.slice(7).trim(), access.token)) return 'bearer';
  const cookie = cookieOf(request, SESSION_COOKIE);
  if (cookie && same(cookie, sessionValue(access.token))) return 'cookie';
  return null;
}

export function tokenMatches(candidate: unknown, access: ConsoleAccess): boolean {
  return typeof candidate === 'string' && same(candidate, access.token);
}

/** Whether a request may be served at all (reads); throws AccessRefused otherwise. */
export function checkRead(request: IncomingMessage, access: ConsoleAccess): void {
  const local = access.loopbackBind && isLoopbackAddress(request.socket.remoteAddress);
  // A page that names another host reached this port through DNS rebinding or a proxy: not ours to answer.
  if (access.loopbackBind && !isLoopbackHost(request.headers.host))
    throw new AccessRefused(421, `this console answers only to localhost, not to '${request.headers.host ?? ''}'`);
  if (!local && credentialOf(request, access) === null)
    throw new AccessRefused(401, 'sign in with the console token (PATCHLOOP_CONSOLE_TOKEN)');
}

/** Whether a request may act (approve, reject, abort, send, extend); throws AccessRefused otherwise. */
export function checkAction(request: IncomingMessage, access: ConsoleAccess): void {
  if (request.method !== 'POST') throw new AccessRefused(405, 'actions are POST requests');
  checkRead(request, access);
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new AccessRefused(415, 'actions take a JSON body (application/json)');
  const credential = credentialOf(request, access);
  if (credential === null) throw new AccessRefused(401, 'actions need the console token (PATCHLOOP_CONSOLE_TOKEN)');
  checkSameOrigin(request, credential);
}

/**
 * A browser's cookie goes with requests other sites make: those must come from the console's own pages.
 * A bearer header is never sent by a browser on its own, so programs need no Origin.
 */
export function checkSameOrigin(request: IncomingMessage, credential: 'bearer' | 'cookie' | null): void {
  if (credential === 'bearer') return;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin')
    throw new AccessRefused(403, `a request from another site (${site}) may not act`);
  const origin = request.headers.origin;
  if (origin !== `http://${request.headers.host}`)
    throw new AccessRefused(403, `a request from origin '${origin ?? 'none'}' may not act`);
}
