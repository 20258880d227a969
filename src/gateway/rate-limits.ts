/** How much one principal may start: runs per minute, and runs (and sessions) going on at once. */
export interface PrincipalLimits {
  runsPerMinute: number;
  concurrentRuns: number;
}

export const DEFAULT_PRINCIPAL_LIMITS: PrincipalLimits = { runsPerMinute: 60, concurrentRuns: 20 };

/** What a caller over a limit gets: HTTP 429 with `Retry-After: seconds`, in its protocol's shape. */
export class RateLimited extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message);
  }
}

/** The header every refused start carries, whatever the protocol: when to try again, in seconds. */
export function retryAfter(error: RateLimited): [name: 'Retry-After', value: string] {
  return ['Retry-After', String(error.retryAfterSeconds)];
}

/** A concurrent run may end any moment: a caller over that limit is told to look again after this. */
const CONCURRENT_RETRY_SECONDS = 5;

/**
 * The limits of each principal. Starts per minute are counted in this process (a sliding minute: a
 * gateway restart forgets them, and several gateways each allow the rate); the runs going on are
 * counted in Temporal's visibility store, so they hold across gateways and restarts (visibility lags a
 * second or so behind a start).
 */
export class RateLimits {
  private readonly limits: PrincipalLimits;
  private readonly starts = new Map<string, number[]>();

  constructor(
    limits: Partial<PrincipalLimits>,
    private readonly running: (principal: string) => Promise<number>,
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_PRINCIPAL_LIMITS, ...limits };
  }

  /** Counts a start for the principal, or throws `RateLimited` (and counts nothing). */
  async admit(principal: string): Promise<void> {
    const now = this.now();
    const recent = (this.starts.get(principal) ?? []).filter((at) => now - at < 60_000);
    if (recent.length >= this.limits.runsPerMinute) {
      this.starts.set(principal, recent);
      const seconds = Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000));
      throw new RateLimited(
        seconds,
        `${principal} started ${recent.length} runs in the last minute (the limit is ${this.limits.runsPerMinute})`,
      );
    }
    const going = await this.running(principal);
    if (going >= this.limits.concurrentRuns)
      throw new RateLimited(
        CONCURRENT_RETRY_SECONDS,
        `${principal} has ${going} runs going on (the limit is ${this.limits.concurrentRuns})`,
      );
    recent.push(now);
    this.starts.set(principal, recent);
    // A principal that stopped calling leaves nothing behind after a minute.
    for (const [name, times] of this.starts) if (times.every((at) => now - at >= 60_000)) this.starts.delete(name);
  }
}
