import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Capabilities for the token stream. A follower may read a run's chunks with the token derived from the
 * worker's stream secret and the run's workflow id; the LLM activity announces it with the stream URL in
 * its heartbeat details, so exactly those who can `describe` the workflow in Temporal can read its
 * tokens. Stateless: verifying needs no table, and unknown run ids cost nothing.
 */
export class StreamTokens {
  private readonly secret: Buffer;

  /** Without a secret, a random one per process (set the same `PATCHLOOP_STREAM_SECRET` on workers behind one URL). */
  constructor(secret?: string) {
    this.secret = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
  }

  tokenFor(runId: string): string {
    return createHmac('sha256', this.secret).update(runId, 'utf8').digest('base64url');
  }

  verify(runId: string, token: string | undefined): boolean {
    if (!token) return false;
    const expected = Buffer.from(this.tokenFor(runId), 'utf8');
    const given = Buffer.from(token, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
