import { z } from 'zod';
import { sharedSchema } from '../../context/shared-schema';

/** A part of an input message's content: text only (`input_text`, or `output_text` in an earlier answer). */
const ResponsesInputPart = sharedSchema('gateway/responses/wire#ResponsesInputPart', () =>
  z.strictObject({
    type: z.enum(['input_text', 'output_text']),
    text: z.string(),
    annotations: z.array(z.unknown()).optional(),
  }),
);

/** One message of `input` as a list (`{role, content}`, `type: "message"` optional). */
export const ResponsesInputMessage = sharedSchema('gateway/responses/wire#ResponsesInputMessage', () =>
  z.object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(ResponsesInputPart).min(1)]),
  }),
);
export type ResponsesInputMessage = z.infer<typeof ResponsesInputMessage>;

/**
 * The body of `POST /v1/responses` the gateway accepts: `model` names an agent. Fields the gateway does
 * not support are refused by name (see `UNSUPPORTED_FIELDS`), never ignored silently.
 */
export const ResponsesRequest = sharedSchema('gateway/responses/wire#ResponsesRequest', () =>
  z.object({
    model: z.string().min(1),
    input: z.union([z.string().min(1), z.array(ResponsesInputMessage).min(1)]),
    stream: z.boolean().optional(),
    background: z.boolean().optional(),
    previous_response_id: z.string().min(1).nullish(),
    store: z.boolean().optional(),
    metadata: z.record(z.string(), z.string()).nullish(),
  }),
);
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

/**
 * Fields of OpenAI's request that an agent's definition decides (its instructions, model, tools and
 * limits): a request naming one is refused, so no caller believes it took effect.
 */
export const UNSUPPORTED_FIELDS = [
  'instructions',
  'tools',
  'tool_choice',
  'temperature',
  'top_p',
  'max_output_tokens',
  'reasoning',
  'text',
  'conversation',
  'prompt',
] as const;

/** Text of an answer, as an item's content part. */
export const ResponsesOutputText = sharedSchema('gateway/responses/wire#ResponsesOutputText', () =>
  z.strictObject({
    type: z.literal('output_text'),
    text: z.string(),
    annotations: z.array(z.never()),
    logprobs: z.array(z.never()),
  }),
);
export type ResponsesOutputText = z.infer<typeof ResponsesOutputText>;

/** An assistant message of the run: one per model call that answered with text. */
export const ResponsesMessageItem = sharedSchema('gateway/responses/wire#ResponsesMessageItem', () =>
  z.strictObject({
    id: z.string(),
    type: z.literal('message'),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    role: z.literal('assistant'),
    content: z.array(ResponsesOutputText),
  }),
);
export type ResponsesMessageItem = z.infer<typeof ResponsesMessageItem>;

const ResponsesUsage = sharedSchema('gateway/responses/wire#ResponsesUsage', () =>
  z.strictObject({
    input_tokens: z.number(),
    input_tokens_details: z.strictObject({ cached_tokens: z.number() }),
    output_tokens: z.number(),
    output_tokens_details: z.strictObject({ reasoning_tokens: z.number() }),
    total_tokens: z.number(),
  }),
);

export const ResponsesStatus = sharedSchema('gateway/responses/wire#ResponsesStatus', () =>
  z.enum(['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete']),
);
export type ResponsesStatus = z.infer<typeof ResponsesStatus>;

/** The response object (`object: "response"`): its id is the run's workflow id. */
export const ResponsesObject = sharedSchema('gateway/responses/wire#ResponsesObject', () =>
  z.strictObject({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number(),
    status: ResponsesStatus,
    background: z.boolean(),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.strictObject({ reason: z.string() }).nullable(),
    instructions: z.null(),
    max_output_tokens: z.null(),
    metadata: z.record(z.string(), z.string()),
    model: z.string(),
    output: z.array(ResponsesMessageItem),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable(),
    temperature: z.null(),
    text: z.strictObject({ format: z.strictObject({ type: z.literal('text') }) }),
    tool_choice: z.literal('auto'),
    tools: z.array(z.never()),
    top_p: z.null(),
    truncation: z.literal('disabled'),
    usage: ResponsesUsage.nullable(),
    user: z.null(),
  }),
);
export type ResponsesObject = z.infer<typeof ResponsesObject>;

/** One streaming event: its `type`, its `sequence_number`, and the type's fields. */
export type ResponsesStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;
