import { z } from 'zod';
import { JsonObject } from './json';
import { sharedSchema } from './shared-schema';

/**
 * Chat messages in the OpenAI Chat Completions shape (spec 2.1).
 *
 * `Message` is what the context core stores and passes along: any JSON object, because messages that
 * arrive inside mutations are stored as given. `ChatMessage` is the checked shape for messages that
 * enter from outside (a run's seed history); `assertChatMessages` is that boundary check.
 */

export const Message = JsonObject;
export type Message = JsonObject;

export const TextPart = sharedSchema('context/messages#TextPart', () =>
  z.looseObject({ type: z.literal('text'), text: z.string() }),
);
export type TextPart = z.infer<typeof TextPart>;

export const ImagePart = sharedSchema('context/messages#ImagePart', () =>
  z.looseObject({
    type: z.literal('image_url'),
    image_url: z.looseObject({ url: z.string(), detail: z.string().optional() }),
  }),
);
export type ImagePart = z.infer<typeof ImagePart>;

export const ContentPart = sharedSchema('context/messages#ContentPart', () =>
  z.union([TextPart, ImagePart, z.looseObject({ type: z.string() })]),
);
export type ContentPart = z.infer<typeof ContentPart>;

export const ToolCall = sharedSchema('context/messages#ToolCall', () =>
  z.looseObject({
    id: z.string().refine((id) => id.trim() !== '', 'tool call id must be a non-empty string'),
    type: z.string().optional(),
    function: z.looseObject({ name: z.string(), arguments: z.string() }),
  }),
);
export type ToolCall = z.infer<typeof ToolCall>;

export const SystemMessage = sharedSchema('context/messages#SystemMessage', () =>
  z.looseObject({ role: z.literal('system'), content: z.string() }),
);
export type SystemMessage = z.infer<typeof SystemMessage>;

export const UserMessage = sharedSchema('context/messages#UserMessage', () =>
  z.looseObject({
    role: z.literal('user'),
    content: z.union([z.string(), z.array(ContentPart)]),
  }),
);
export type UserMessage = z.infer<typeof UserMessage>;

export const AssistantMessage = sharedSchema('context/messages#AssistantMessage', () =>
  z.looseObject({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(ContentPart), z.null()]),
    tool_calls: z.array(ToolCall).nullable().optional(),
  }),
);
export type AssistantMessage = z.infer<typeof AssistantMessage>;

export const ToolMessage = sharedSchema('context/messages#ToolMessage', () =>
  z.looseObject({
    role: z.literal('tool'),
    content: z.string(),
    tool_call_id: z.string().refine((id) => id.trim() !== '', 'tool_call_id must be a non-empty string'),
  }),
);
export type ToolMessage = z.infer<typeof ToolMessage>;

/** Legacy role; passed through untouched. */
export const FunctionMessage = sharedSchema('context/messages#FunctionMessage', () =>
  z.looseObject({
    role: z.literal('function'),
    content: z.string(),
    name: z.string().optional(),
  }),
);
export type FunctionMessage = z.infer<typeof FunctionMessage>;

export const ChatMessage = sharedSchema('context/messages#ChatMessage', () =>
  z.discriminatedUnion('role', [SystemMessage, UserMessage, AssistantMessage, ToolMessage, FunctionMessage]),
);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatMessages = sharedSchema('context/messages#ChatMessages', () => z.array(ChatMessage));

/** Checked chat messages are JSON objects; this only widens the type for the core. */
export function asMessages(messages: readonly ChatMessage[]): Message[] {
  return messages as unknown as Message[];
}
