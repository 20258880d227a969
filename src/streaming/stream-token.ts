import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** How long a token stays valid after it is minted (each LLM attempt announces a fresh one). */
const TOKEN_LIFETIME_MS = 60 * 60 * 1000;

/**
 * Capabilities for the token stream. A follower may read a run's chunks with a token derived from the
 * worker's stream secret, the run's workflow id and an expiry; the LLM activity announces it with the
 * stream URL in its heartbeat details, so exactly those who can `describe` the workflow in Temporal can
 * read its tokens, for an hour. Stateless: verifying needs no table, and unknown run ids cost nothing.
 */
export class StreamTokens {
  private readonly secret: Buffer;

  /** Without a secret, a random one per process (set the same `PATCHLOOP_STREAM_SECRET` on workers behind one URL). */
  constructor(
    secret?: string,
    private readonly now: () => number = Date.now,
  ) {
    this.secret = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
  }

  /** `<expiry in seconds>.<HMAC-SHA256 of the workflow id and the expiry>`. */
  tokenFor(runId: string): string {
    const expires = Math.ceil((this.now() + TOKEN_LIFETIME_MS) / 1000);
    return `${expires}.${this.mac(runId, expires)}`;
  }

  verify(runId: string, token: string | undefined): boolean {
    const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '');
    if (!match) return false;
    const expires = Number(match[1]);
    if (expires * 1000 < this.now()) return false;
    const expected = Buffer.from(this.mac(runId, expires), 'utf8');
    const given = Buffer.from(match[2]!, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(runId: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${runId}\n${expires}`, 'utf8').digest('base64url');
  }
}
