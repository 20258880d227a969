import { z } from 'zod';
import { ChatMessages, Message } from '../context';
import { CarriedRun, ContinueAsNewPolicy } from './carried-state';
import { TokenUsage } from './usage';
import { ContextOverride } from './context-settings';
import { BudgetOverride } from './budget';
import { PrincipalName } from './principal';
import { sharedSchema } from '../context/shared-schema';
import type { LoggedRunEvent } from './events';
import { ForkSource } from './fork-source';

export const SESSION_SCHEMA_VERSION = 5;
export const SESSION_SCHEMA_VERSIONS: readonly number[] = [1, 2, 3, 4, 5];

/**
 * What a session carries across continue-as-new: the core every run carries (the context state itself,
 * never a summary of it) and its turn count. Version 2 carries the whole core (version 1 lacked the
 * SelfRef queue, the rejected-input count and the event window), version 3 adds the context ledger,
 * version 4 the latest updates applied (`recent_updates`), version 5 the events held for durable waits;
 * older states still load (version 1's events counted as dropped).
 */
export const SessionState = sharedSchema('runtime/session#SessionState', () =>
  CarriedRun.extend({
    schema_version: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5)]),
    turns: z.number().int().nonnegative(),
  }).transform((state) => (state.schema_version === 1 ? { ...state, events_dropped: state.event_seq } : state)),
);

export type SessionState = z.infer<typeof SessionState>;

/** What a fork of a session reads from it (`forkedSession`): its state as turn `at` began, and that turn's message. */
export const SessionForkCapture = sharedSchema('runtime/session#SessionForkCapture', () =>
  z.strictObject({ state: SessionState, message: z.string() }),
);

/** Input of workflow `chatSession` (schemas/chat-session-input.schema.json). */
export const ChatSessionInput = sharedSchema('runtime/session#ChatSessionInput', () =>
  z.strictObject({
    agent: z.string().min(1).describe("A registered agent's name."),
    history: ChatMessages.nullish().describe(
      'Earlier conversation to start from (OpenAI chat shape); null means none.',
    ),
    max_tool_calls: z.number().int().nonnegative().nullable().optional().describe('Tool-call budget per turn.'),
    continue_as_new: ContinueAsNewPolicy.default(ContinueAsNewPolicy.parse({})),
    context: ContextOverride.optional().describe("Overrides the agent's context settings for this session."),
    budget: BudgetOverride.optional().describe(
      "Overrides the agent's budget for this session (all its turns together).",
    ),
    principal: PrincipalName.optional().describe(
      'Who started the session through the gateway (docs/gateway.md); set by the gateway, not by its callers.',
    ),
    fork_from: ForkSource.optional().describe(
      'Starts the session as a fork of another at one of its turns (`patchloop fork`, docs/fork-and-evals.md).',
    ),
    state: SessionState.optional().describe('Carried by continue-as-new; not for callers.'),
  }),
);
export type ChatSessionInput = z.infer<typeof ChatSessionInput>;
export type ChatSessionInputWire = z.input<typeof ChatSessionInput>;

/** What a `send` update answers when its turn ends. */
export const TurnReply = sharedSchema('runtime/session#TurnReply', () =>
  z.strictObject({
    status: z.enum(['completed', 'aborted', 'failed', 'budget_exhausted']),
    reply: z.string().nullable(),
    turn: z.number().int().positive(),
    abort_reason: z.string().optional(),
    /**
     * Why a failed turn failed: what its model calls and tools added to the context was rolled back, the
     * user's message stays, and the session goes on.
     */
    error: z.strictObject({ type: z.string(), message: z.string() }).optional(),
  }),
);
export type TurnReply = z.infer<typeof TurnReply>;

export const ChatSessionResult = sharedSchema('runtime/session#ChatSessionResult', () =>
  z.strictObject({
    turns: z.number().int().nonnegative(),
    /** Empty when `transcript_omitted`. */
    transcript: z.array(Message),
    usage: TokenUsage.nullable(),
    /**
     * The transcript would make the result pass the payload store's threshold: it is left out and read
     * by `transcript_query` (the TypeScript client fills it in), as in a run's result.
     */
    transcript_omitted: z.literal(true).optional(),
    transcript_length: z.number().int().nonnegative().optional(),
    transcript_query: z.literal('transcriptPage').optional(),
  }),
);
export type ChatSessionResult = z.infer<typeof ChatSessionResult>;

/**
 * A session's latest turn when it failed: its error, from the newest event that ended a turn in the log
 * (`turn_failed`, or `react_end` for a turn that did not fail); null otherwise.
 */
export function lastTurnFailure(events: readonly LoggedRunEvent[]): { type: string; message: string } | null {
  for (let at = events.length - 1; at >= 0; at -= 1) {
    const event = events[at]!;
    if (event.event_type === 'turn_failed') return { type: event.error_type, message: event.message };
    if (event.event_type === 'react_end') return null;
  }
  return null;
}
