/**
 * An activity learns of a cancel only from the answer to a heartbeat, and a running phase heartbeats
 * once a second: left alone, an abort would wait up to that second (and the SDK's throttle) before the
 * phase hands back its partial result. When a run is asked to abort while a phase runs, its workflow
 * tells the worker that processed the signal (the `abortRequested` sink); the phase's activities that
 * run in that same process then heartbeat a few times at once, a little after the cancel has reached the
 * server, and so learn of it within a fraction of a second. Activities on another worker learn of it at
 * their next timed heartbeat, as before. Nothing here changes what a cancel means: the cancel still comes
 * from the server, with its details.
 */

/**
 * After the sink, when the extra heartbeats go: the first usually finds the cancel recorded already; the
 * SDK holds a later one until its throttle (250 ms) has passed since the last one sent.
 */
export const ABORT_NUDGE_DELAYS_MS: readonly number[] = [40, 150, 400];

/** The heartbeats of the activities running in this process, by the workflow they work for. */
const running = new Map<string, Set<() => void>>();

/**
 * Registers an activity's heartbeat under its workflow's id until the returned function is called (when
 * the activity stops heartbeating). The registry is the process's: a worker's sink reaches the
 * activities of any worker in the process, as they are all the same workflow's work.
 */
export function nudgeableHeartbeat(workflowId: string, heartbeat: () => void): () => void {
  let beats = running.get(workflowId);
  if (!beats) running.set(workflowId, (beats = new Set()));
  beats.add(heartbeat);
  return () => {
    beats.delete(heartbeat);
    if (beats.size === 0 && running.get(workflowId) === beats) running.delete(workflowId);
  };
}

/**
 * The `abortRequested` sink: each activity of the workflow running here heartbeats at each of
 * `ABORT_NUDGE_DELAYS_MS` (one that has stopped meanwhile is skipped). The sink runs before the workflow
 * task that cancels the phase is sent to the server: hence the delays, not a heartbeat at once.
 */
export function nudgeAfterAbort(workflowId: string, delaysMs: readonly number[] = ABORT_NUDGE_DELAYS_MS): void {
  if (!running.has(workflowId)) return;
  for (const delay of delaysMs)
    setTimeout(() => {
      for (const heartbeat of running.get(workflowId) ?? []) heartbeat();
    }, delay).unref();
}
