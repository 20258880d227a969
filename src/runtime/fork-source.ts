import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/** Where a fork comes from and what it changes (`fork_from` of `agentRun`'s input). */
export const ForkSource = sharedSchema('runtime/fork-source#ForkSource', () =>
  z.strictObject({
    /** The original run's workflow id (any run of its continue-as-new chain). */
    workflow_id: z.string().min(1),
    /**
     * The iteration whose model request the fork makes again (as `show` and the events number them); for a
     * session, the turn (1 for the first) whose message the fork answers again.
     */
    at: z.number().int().nonnegative(),
    /** Another agent answers from there on: its spec (tools, model, limits) and its instructions. */
    agent: z.string().min(1).optional(),
    /** Another model for the same agent. */
    model: z.string().min(1).optional(),
    /** Other instructions: the transcript's system prompt becomes them (a patch at the first compile). */
    instructions: z.string().min(1).optional(),
    /**
     * A user message the fork's first request adds (queued as a message that arrived then would be); for a
     * session, the message the forked turn answers instead of the original's.
     */
    message: z.string().min(1).optional(),
  }),
);
export type ForkSource = z.infer<typeof ForkSource>;
