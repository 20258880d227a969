import type { JsonObject, JsonValue } from '../context';
import type { LlmRequest } from '../runtime';
import { failure, FailureType } from '../common';

/**
 * The compiled request (Chat Completions shape, as the workflow wrote it) in the Responses API's form.
 * Only the wire changes: the transcript, its digest and the workflow's request stay as they are.
 *
 * - every message becomes input items in place (system messages too, as `system` message items, so a
 *   transcript with a system message anywhere is sent as it is);
 * - an assistant message becomes, in order, the Responses reasoning items of its `reasoning_details`
 *   (sent back whole, as the provider gave them), its text, then one `function_call` per tool call;
 * - a `tool` message becomes a `function_call_output`;
 * - tools are flat function tools (`strict: false` unless the tool says otherwise: the Responses API
 *   would make them strict, which changes optional parameters), `tool_choice` naming a function is
 *   flat too, `max_tokens`/`max_completion_tokens` is `max_output_tokens`, a `response_format` is
 *   `text.format`;
 * - `reasoning_effort` is `reasoning.effort`;
 * - `store: false`: nothing is kept on the provider's side. Reasoning travels with the requests
 *   (`include: ['reasoning.encrypted_content']`) only when the request asks for reasoning (`reasoning`
 *   or `reasoning_effort`) or carries reasoning items: OpenAI refuses that `include` for models that do
 *   not reason (gpt-4o: "Encrypted content is not supported with this model");
 * - `stream_options` is Chat Completions only (the Responses stream always ends with usage); options
 *   the Responses API does not have (`CHAT_ONLY_OPTIONS`) fail the call before anything is sent.
 * Other options go as they are; a server that does not take one says so.
 */
export function responsesBody(request: LlmRequest): JsonObject {
  const {
    messages,
    tools,
    tool_choice: toolChoice,
    max_tokens: maxTokens,
    max_completion_tokens: maxCompletionTokens,
    response_format: responseFormat,
    stream_options: _streamOptions,
    reasoning_effort: reasoningEffort,
    model,
    stream,
    ...rest
  } = request as LlmRequest & Record<string, JsonValue | undefined>;
  const chatOnly = CHAT_ONLY_OPTIONS.filter((option) => rest[option] !== undefined);
  if (chatOnly.length > 0)
    throw failure(
      FailureType.InvalidLlmRequest,
      `the Responses API has no ${chatOnly.join(', ')}: remove ${chatOnly.length > 1 ? 'them' : 'it'} from the agent's llm_options, or use api chat_completions`,
    );
  const body: JsonObject = { model, input: messages.flatMap(inputItems) };
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) body[key] = value;
  if (reasoningEffort !== undefined && reasoningEffort !== null)
    body['reasoning'] = { ...(isObject(body['reasoning']) ? body['reasoning'] : {}), effort: reasoningEffort };
  if (tools && tools.length > 0) body['tools'] = tools.map(functionTool);
  if (toolChoice !== undefined) body['tool_choice'] = responsesToolChoice(toolChoice);
  const maxOutput = maxCompletionTokens ?? maxTokens;
  if (maxOutput !== undefined && maxOutput !== null) body['max_output_tokens'] = maxOutput;
  if (isObject(responseFormat)) body['text'] = { format: textFormat(responseFormat) };
  body['stream'] = stream;
  body['store'] = false;
  const input = body['input'] as JsonObject[];
  if (body['reasoning'] !== undefined || input.some((item) => item['type'] === 'reasoning'))
    body['include'] = ['reasoning.encrypted_content'];
  return body;
}

/** Chat Completions options the Responses API does not take. */
const CHAT_ONLY_OPTIONS = [
  'n',
  'stop',
  'seed',
  'logprobs',
  'logit_bias',
  'presence_penalty',
  'frequency_penalty',
  'functions',
  'function_call',
  'modalities',
  'audio',
  'prediction',
] as const;

/** Reasoning items of the Responses API among a message's opaque `reasoning_details`. */
export function responsesReasoning(details: JsonValue | undefined): JsonObject[] {
  if (!Array.isArray(details)) return [];
  // With store: false only an item that carries its encrypted content can be sent back (an item by id
  // alone names nothing the provider kept).
  return details.filter(
    (detail): detail is JsonObject =>
      isObject(detail) && detail['type'] === 'reasoning' && typeof detail['encrypted_content'] === 'string',
  );
}

function inputItems(message: JsonObject, index: number): JsonObject[] {
  const role = message['role'];
  const content = message['content'];
  switch (role) {
    case 'system':
    case 'developer':
      return [{ type: 'message', role, content: textOf(content, index, role) }];
    case 'user':
      return [{ type: 'message', role, content: userContent(content, index) }];
    case 'assistant':
      return assistantItems(message, index);
    case 'tool':
      return [
        {
          type: 'function_call_output',
          call_id: String(message['tool_call_id']),
          output: textOf(content, index, 'tool'),
        },
      ];
    default:
      throw untranslatable(index, `a message with role ${JSON.stringify(role)} has no Responses API form`);
  }
}

function assistantItems(message: JsonObject, index: number): JsonObject[] {
  const items: JsonObject[] = [...responsesReasoning(message['reasoning_details'])];
  const content = message['content'];
  const calls = Array.isArray(message['tool_calls']) ? message['tool_calls'] : [];
  // A message that only calls tools has no text item (its content is null, or "" for some servers).
  if (content !== null && content !== undefined && !(calls.length > 0 && content === ''))
    items.push({ type: 'message', role: 'assistant', content: textOf(content, index, 'assistant') });
  for (const call of calls) {
    const fn = isObject(call) && isObject(call['function']) ? call['function'] : {};
    items.push({
      type: 'function_call',
      call_id: String(isObject(call) ? call['id'] : ''),
      name: String(fn['name'] ?? ''),
      arguments: String(fn['arguments'] ?? ''),
    });
  }
  return items;
}

/** A user message's content: its text, or its parts as input parts (text and images). */
function userContent(content: JsonValue | undefined, index: number): JsonValue {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw untranslatable(index, 'a user message without text or parts');
  return content.map((part): JsonObject => {
    if (isObject(part) && part['type'] === 'text') return { type: 'input_text', text: part['text'] ?? '' };
    if (isObject(part) && part['type'] === 'image_url') {
      const image = isObject(part['image_url']) ? part['image_url'] : {};
      return { type: 'input_image', image_url: image['url'] ?? '', detail: image['detail'] ?? 'auto' };
    }
    const kind = isObject(part) ? JSON.stringify(part['type']) : typeof part;
    throw untranslatable(index, `a content part of type ${kind} has no Responses API form`);
  });
}

/** Text content: a string as it is, text parts joined (other parts have no form in this role). */
function textOf(content: JsonValue | undefined, index: number, role: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((part) => isObject(part) && part['type'] === 'text'))
    return content.map((part) => String((part as JsonObject)['text'] ?? '')).join('');
  throw untranslatable(index, `a ${role} message's content must be text`);
}

function functionTool(tool: JsonObject): JsonObject {
  const fn = isObject(tool['function']) ? tool['function'] : {};
  if (tool['type'] !== 'function' || typeof fn['name'] !== 'string')
    throw failure(
      FailureType.InvalidLlmRequest,
      `a tool of type ${JSON.stringify(tool['type'])} has no Responses form`,
    );
  return {
    type: 'function',
    name: fn['name'],
    ...(fn['description'] !== undefined ? { description: fn['description'] } : {}),
    parameters: fn['parameters'] ?? { type: 'object', properties: {} },
    strict: fn['strict'] === true,
  };
}

function responsesToolChoice(choice: JsonValue): JsonValue {
  if (isObject(choice) && choice['type'] === 'function' && isObject(choice['function']))
    return { type: 'function', name: choice['function']['name'] ?? '' };
  return choice;
}

/** `response_format` of Chat Completions as the Responses API's `text.format`. */
function textFormat(format: JsonObject): JsonObject {
  if (format['type'] !== 'json_schema' || !isObject(format['json_schema'])) return format;
  return { type: 'json_schema', ...format['json_schema'] };
}

function untranslatable(index: number, what: string) {
  return failure(FailureType.InvalidLlmRequest, `message ${index} cannot be sent to the Responses API: ${what}`);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
