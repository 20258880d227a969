import { z } from 'zod';
import { ChatMessages, Message, Mutation } from '../context';
import { AgentSpec } from './agent';
import { CarriedInboxEntry, ContinueAsNewPolicy } from './carried-state';
import { TokenUsage } from './usage';
import { sharedSchema } from '../context/shared-schema';

export const SESSION_SCHEMA_VERSION = 1;

/**
 * What a session carries across continue-as-new: the context state itself (transcript, pending
 * patches, queued messages), never a summary of it. Versioned, so a new build can read an old state.
 */
export const SessionState = sharedSchema('runtime/session#SessionState', () =>
  z.strictObject({
    schema_version: z.literal(SESSION_SCHEMA_VERSION),
    agent: AgentSpec,
    transcript: z.array(Message),
    pending: z.array(Mutation),
    inbox: z.array(CarriedInboxEntry),
    next_inbox_id: z.number().int(),
    iteration: z.number().int().nonnegative(),
    llm_calls: z.number().int().nonnegative(),
    tool_calls: z.number().int().nonnegative(),
    usage: TokenUsage.nullable(),
    fork_count: z.number().int().nonnegative(),
    event_seq: z.number().int().nonnegative(),
    turns: z.number().int().nonnegative(),
    continued: z.number().int().nonnegative(),
  }),
);
export type SessionState = z.infer<typeof SessionState>;

/** Input of workflow `chatSession` (schemas/chat-session-input.schema.json). */
export const ChatSessionInput = sharedSchema('runtime/session#ChatSessionInput', () =>
  z.strictObject({
    agent: z.string().min(1).describe("A registered agent's name."),
    history: ChatMessages.nullish().describe(
      'Earlier conversation to start from (OpenAI chat shape); null means none.',
    ),
    max_tool_calls: z.number().int().nonnegative().nullable().optional().describe('Tool-call budget per turn.'),
    continue_as_new: ContinueAsNewPolicy.default(ContinueAsNewPolicy.parse({})),
    state: SessionState.optional().describe('Carried by continue-as-new; not for callers.'),
  }),
);
export type ChatSessionInput = z.infer<typeof ChatSessionInput>;
export type ChatSessionInputWire = z.input<typeof ChatSessionInput>;

/** What a `send` update answers when its turn ends. */
export const TurnReply = sharedSchema('runtime/session#TurnReply', () =>
  z.strictObject({
    status: z.enum(['completed', 'aborted', 'failed']),
    reply: z.string().nullable(),
    turn: z.number().int().positive(),
    abort_reason: z.string().optional(),
    /** Why a failed turn failed; its effects on the context were rolled back and the session goes on. */
    error: z.strictObject({ type: z.string(), message: z.string() }).optional(),
  }),
);
export type TurnReply = z.infer<typeof TurnReply>;

export const ChatSessionResult = sharedSchema('runtime/session#ChatSessionResult', () =>
  z.strictObject({
    turns: z.number().int().nonnegative(),
    transcript: z.array(Message),
    usage: TokenUsage.nullable(),
  }),
);
export type ChatSessionResult = z.infer<typeof ChatSessionResult>;
