import { z } from 'zod';
import { JsonValue } from './json';
import { Message, ToolCall } from './messages';
import { sharedSchema } from './shared-schema';

/**
 * The ten runtime patches (spec 2.2). Wire format: `type` is the variant name, fields are snake_case.
 * Decoding rejects an unknown `type`, a missing required field and an unknown field. Values of the
 * fields whose wrong types the spec gives an error for (`text`, `remember`) are checked later, by
 * `applyMutations`, so the spec's error texts surface.
 */

export const AssistantMessageMutation = sharedSchema('context/mutations#AssistantMessageMutation', () =>
  z.strictObject({
    type: z.literal('AssistantMessageMutation'),
    role: JsonValue.optional(),
    content: z.string().nullable().optional(),
    tool_calls: z.array(ToolCall).optional(),
    reasoning_details: z.array(JsonValue).optional(),
  }),
);
export type AssistantMessageMutation = z.infer<typeof AssistantMessageMutation>;

export const ToolResultMutation = sharedSchema('context/mutations#ToolResultMutation', () =>
  z.strictObject({
    type: z.literal('ToolResultMutation'),
    tool_call_id: z.string(),
    content: z.string(),
    role: JsonValue.optional(),
  }),
);
export type ToolResultMutation = z.infer<typeof ToolResultMutation>;

export const MultimodalToolResultMutation = sharedSchema('context/mutations#MultimodalToolResultMutation', () =>
  z.strictObject({
    type: z.literal('MultimodalToolResultMutation'),
    tool_call_id: z.string(),
    tool_name: z.string(),
    arguments: z.string(),
    user_messages: z.array(Message),
  }),
);
export type MultimodalToolResultMutation = z.infer<typeof MultimodalToolResultMutation>;

export const UserMessageMutation = sharedSchema('context/mutations#UserMessageMutation', () =>
  z.strictObject({
    type: z.literal('UserMessageMutation'),
    message: Message,
  }),
);
export type UserMessageMutation = z.infer<typeof UserMessageMutation>;

export const ContextReplaceMutation = sharedSchema('context/mutations#ContextReplaceMutation', () =>
  z.strictObject({
    type: z.literal('ContextReplaceMutation'),
    messages: z.array(Message),
  }),
);
export type ContextReplaceMutation = z.infer<typeof ContextReplaceMutation>;

export const ContextSummaryMutation = sharedSchema('context/mutations#ContextSummaryMutation', () =>
  z.strictObject({
    type: z.literal('ContextSummaryMutation'),
    summary_message: Message,
    remember: z.array(JsonValue).optional(),
  }),
);
export type ContextSummaryMutation = z.infer<typeof ContextSummaryMutation>;

export const ExperienceRememberMutation = sharedSchema('context/mutations#ExperienceRememberMutation', () =>
  z.strictObject({
    type: z.literal('ExperienceRememberMutation'),
    text: JsonValue,
  }),
);
export type ExperienceRememberMutation = z.infer<typeof ExperienceRememberMutation>;

export const ExperienceForgetMutation = sharedSchema('context/mutations#ExperienceForgetMutation', () =>
  z.strictObject({
    type: z.literal('ExperienceForgetMutation'),
    experience_id: z.string(),
  }),
);
export type ExperienceForgetMutation = z.infer<typeof ExperienceForgetMutation>;

export const AssistantTruncatedMutation = sharedSchema('context/mutations#AssistantTruncatedMutation', () =>
  z.strictObject({
    type: z.literal('AssistantTruncatedMutation'),
    partial_content: z.string(),
    abort_reason: z.string().optional(),
  }),
);
export type AssistantTruncatedMutation = z.infer<typeof AssistantTruncatedMutation>;

export const ToolCancelledMutation = sharedSchema('context/mutations#ToolCancelledMutation', () =>
  z.strictObject({
    type: z.literal('ToolCancelledMutation'),
    tool_call_id: z.string(),
    tool_name: z.string(),
    abort_reason: z.string().optional(),
  }),
);
export type ToolCancelledMutation = z.infer<typeof ToolCancelledMutation>;

export const Mutation = sharedSchema('context/mutations#Mutation', () =>
  z.discriminatedUnion('type', [
    AssistantMessageMutation,
    ToolResultMutation,
    MultimodalToolResultMutation,
    UserMessageMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceRememberMutation,
    ExperienceForgetMutation,
    AssistantTruncatedMutation,
    ToolCancelledMutation,
  ]),
);
export type Mutation = z.infer<typeof Mutation>;
export type MutationType = Mutation['type'];

export const Mutations = sharedSchema('context/mutations#Mutations', () => z.array(Mutation));
