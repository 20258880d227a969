import type { Sinks } from '@temporalio/workflow';

/**
 * Observations workflows hand to the worker process (not recorded in history). Replay tests inject a
 * sink that is called during replay, to check what a replayed run computes, not only its commands.
 */
export interface PatchloopSinks extends Sinks {
  patchloop: {
    runEnded(summary: RunEndedSummary): void;
    /**
     * The run was asked to abort while a phase ran: the worker has that phase's activities, when they run
     * in its process, heartbeat at once (`src/activities/abort-nudges.ts`), so that they learn of the
     * cancel within a fraction of a second instead of at their next timed heartbeat.
     */
    abortRequested(): void;
  };
  /**
   * Only in the replay a fork reads its point from (`activities/fork-capture.ts`): the iterations whose
   * model request the replayed run reached, and its carried state before the one asked for.
   */
  patchloopFork: {
    reached(iteration: number): void;
    captured(iteration: number, state: unknown): void;
  };
}

export interface RunEndedSummary {
  status: string;
  /**
   * The workflow's result, handed over as is: the replay test checks that a replay computes the very
   * same result; the worker's own sink ignores it (no hashing in the sandbox for it).
   */
  result: unknown;
  llmCalls: number;
  toolCalls: number;
}
