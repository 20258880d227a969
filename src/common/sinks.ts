import type { Sinks } from '@temporalio/workflow';

/**
 * Observations workflows hand to the worker process (not recorded in history). Replay tests inject a
 * sink that is called during replay, to check what a replayed run computes, not only its commands.
 */
export interface PatchloopSinks extends Sinks {
  patchloop: {
    runEnded(summary: RunEndedSummary): void;
  };
}

export interface RunEndedSummary {
  status: string;
  /** SHA-256 of the workflow result's JSON text: a replay must compute the very same result. */
  resultDigest: string;
  llmCalls: number;
  toolCalls: number;
}
