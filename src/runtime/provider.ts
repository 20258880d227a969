import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/**
 * Which model server an agent talks to, and how. Every field is optional: what the agent leaves out, the
 * worker's environment gives (OPENAI_BASE_URL, OPENAI_API_KEY, PATCHLOOP_MODEL, PATCHLOOP_PROVIDER_PROFILE,
 * PATCHLOOP_PROVIDER_API). The key itself never appears here (nor in history): only the name of the
 * worker's environment variable that holds it.
 */
export const ProviderProfileName = sharedSchema('runtime/provider#ProviderProfileName', () =>
  z.enum(['openai', 'llama-cpp', 'vllm', 'ollama', 'litellm', 'generic']),
);
export type ProviderProfileName = z.infer<typeof ProviderProfileName>;

/** The wire format: Chat Completions, or OpenAI's Responses API. */
export const ProviderApi = sharedSchema('runtime/provider#ProviderApi', () =>
  z.enum(['chat_completions', 'responses']),
);
export type ProviderApi = z.infer<typeof ProviderApi>;

export const ProviderSelection = sharedSchema('runtime/provider#ProviderSelection', () =>
  z.strictObject({
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    /** The name of the worker's environment variable that holds the API key (e.g. `VLLM_API_KEY`). */
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name, not the key itself')
      .optional(),
    model: z.string().min(1).optional(),
    profile: ProviderProfileName.optional(),
    api: ProviderApi.optional(),
  }),
);
export type ProviderSelection = z.infer<typeof ProviderSelection>;

/**
 * What a kind of server accepts and sends, as measured or documented for it. Applied only where the
 * request is written for the wire: the transcript, its digest and the spec's request stay as they are.
 */
export interface ProviderProfile {
  /**
   * The `content` of an assistant message that only calls tools. OpenAI's API takes `null`; servers that
   * validate it as a string answer 500 (llama-cpp-python 0.3) or lose it (LiteLLM), so they get `""`.
   */
  toolCallOnlyContent: null | '';
  /**
   * `tool_choice` sent with tools when the agent names none. llama-cpp-python ignores tools without one;
   * `auto` lets its function-calling chat format choose between a call and a message.
   */
  defaultToolChoice?: 'auto';
  /** Whether the server takes `stream_options` (and then sends usage in the stream's last chunk). */
  streamOptions: boolean;
  /**
   * Whether it can stream a reply to tools with `tool_choice: auto`. llama-cpp-python 0.3.36 answers
   * such a stream with an empty 200 body: the request goes unstreamed (followers get the reply whole).
   */
  streamsAutoToolChoice: boolean;
}

export const PROVIDER_PROFILES: Readonly<Record<ProviderProfileName, ProviderProfile>> = {
  openai: { toolCallOnlyContent: null, streamOptions: true, streamsAutoToolChoice: true },
  'llama-cpp': {
    toolCallOnlyContent: '',
    defaultToolChoice: 'auto',
    streamOptions: false,
    streamsAutoToolChoice: false,
  },
  vllm: { toolCallOnlyContent: null, streamOptions: true, streamsAutoToolChoice: true },
  ollama: { toolCallOnlyContent: '', streamOptions: true, streamsAutoToolChoice: true },
  litellm: { toolCallOnlyContent: '', streamOptions: true, streamsAutoToolChoice: true },
  // Anything else that speaks OpenAI's format: the forms every server we met accepts.
  generic: { toolCallOnlyContent: '', streamOptions: false, streamsAutoToolChoice: true },
};

/** The provider a call goes to: the agent's choices over the worker's defaults. */
export interface ResolvedProvider {
  baseURL?: string;
  /** The variable the agent reads its key from; absent: the worker's own key (OPENAI_API_KEY). */
  apiKeyEnv?: string;
  profile: ProviderProfileName;
  api: ProviderApi;
}

export interface ProviderDefaults {
  baseURL?: string;
  profile?: ProviderProfileName;
  api?: ProviderApi;
}

export function resolveProvider(
  selection: ProviderSelection | undefined,
  defaults: ProviderDefaults,
): ResolvedProvider {
  const baseURL = selection?.base_url ?? defaults.baseURL;
  return {
    ...(baseURL ? { baseURL } : {}),
    ...(selection?.api_key_env ? { apiKeyEnv: selection.api_key_env } : {}),
    profile: selection?.profile ?? defaults.profile ?? 'openai',
    api: selection?.api ?? defaults.api ?? 'chat_completions',
  };
}

/**
 * The request as this profile's server takes it. Returns the same object when nothing changes (the
 * workflow's text then goes out byte for byte).
 */
export function adaptRequest<T extends Record<string, unknown>>(request: T, profile: ProviderProfile): T {
  const changes: Record<string, unknown> = {};
  const messages = request['messages'];
  if (profile.toolCallOnlyContent !== null && Array.isArray(messages)) {
    const filled = (messages as Array<Record<string, unknown>>).map((message) =>
      message['role'] === 'assistant' && message['content'] === null && Array.isArray(message['tool_calls'])
        ? { ...message, content: profile.toolCallOnlyContent }
        : message,
    );
    if (filled.some((message, index) => message !== messages[index])) changes['messages'] = filled;
  }
  const tools = request['tools'];
  if (profile.defaultToolChoice && Array.isArray(tools) && tools.length > 0 && request['tool_choice'] === undefined)
    changes['tool_choice'] = profile.defaultToolChoice;
  const toolChoice = changes['tool_choice'] ?? request['tool_choice'];
  if (!profile.streamsAutoToolChoice && request['stream'] === true && toolChoice === 'auto' && Array.isArray(tools))
    changes['stream'] = false;
  const dropStreamOptions = 'stream_options' in request && (!profile.streamOptions || changes['stream'] === false);
  if (Object.keys(changes).length === 0 && !dropStreamOptions) return request;
  const adapted: Record<string, unknown> = { ...request, ...changes };
  if (dropStreamOptions) delete adapted['stream_options'];
  return adapted as T;
}

/** Why a key variable an agent names cannot give a key (unset or empty), or null when it can. */
export function providerKeyProblem(
  variable: string,
  environment: Readonly<Record<string, string | undefined>>,
): string | null {
  return environment[variable]
    ? null
    : `reads its provider's API key from ${variable}, which this worker's environment does not set`;
}

/**
 * Agents whose provider names a key variable the worker's environment does not set: the worker refuses
 * to start with them (a call would fail `ProviderAuthFailed` otherwise, run after run).
 */
export function missingProviderKeys(
  agents: ReadonlyArray<{ name: string; provider?: ProviderSelection | undefined }>,
  environment: Readonly<Record<string, string | undefined>>,
): string[] {
  return agents.flatMap((agent) => {
    const variable = agent.provider?.api_key_env;
    const problem = variable ? providerKeyProblem(variable, environment) : null;
    return problem ? [`agent '${agent.name}' ${problem}`] : [];
  });
}
