/**
 * How often patchloop's activities heartbeat, which Temporal Cloud bills per heartbeat that reaches the
 * server (docs/runs.md#billable-actions). The first goes out a quarter second after the start, so a
 * call shorter than that (a fast model, a cached reply) sends none; then one a second, which bounds how
 * long an abort takes to reach a running call (a cancel arrives only in a heartbeat's answer).
 */
export const HEARTBEAT_FIRST_MS = 250;
export const HEARTBEAT_EVERY_MS = 1000;

/** The heartbeats one activity attempt of `durationMs` sends on this cadence (checkpoints and failures aside). */
export function heartbeatsIn(durationMs: number, everyMs = HEARTBEAT_EVERY_MS, firstMs = HEARTBEAT_FIRST_MS): number {
  return durationMs < firstMs ? 0 : 1 + Math.floor((durationMs - firstMs) / everyMs);
}
