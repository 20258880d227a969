import { describe, expect, it } from 'vitest';
import {
  adaptRequest,
  AgentDefinition,
  missingProviderKeys,
  PROVIDER_PROFILES,
  resolveProvider,
} from '../../src/runtime';

const call = { id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } };
const request = {
  model: 'm',
  messages: [
    { role: 'user', content: 'add 1 and 2' },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: 'c1', content: '3' },
  ],
  tools: [{ type: 'function', function: { name: 'add', parameters: {} } }],
  stream: true,
  stream_options: { include_usage: true },
};

describe('provider profiles: the request as each server takes it', () => {
  it('openai and vllm send the request unchanged (the same object: the workflow text goes out byte for byte)', () => {
    expect(adaptRequest(request, PROVIDER_PROFILES.openai)).toBe(request);
    expect(adaptRequest(request, PROVIDER_PROFILES.vllm)).toBe(request);
  });

  it('llama-cpp: "" for a tool-call-only message, tool_choice auto with tools (not streamed), no stream_options', () => {
    expect(adaptRequest(request, PROVIDER_PROFILES['llama-cpp'])).toEqual({
      model: 'm',
      messages: [
        { role: 'user', content: 'add 1 and 2' },
        { role: 'assistant', content: '', tool_calls: [call] },
        { role: 'tool', tool_call_id: 'c1', content: '3' },
      ],
      tools: request.tools,
      tool_choice: 'auto',
      stream: false,
    });
    // The agent's own choice stays; no tools, no tool_choice.
    const named = { ...request, tool_choice: { type: 'function', function: { name: 'add' } } };
    expect(adaptRequest(named, PROVIDER_PROFILES['llama-cpp'])).toMatchObject({
      tool_choice: named.tool_choice,
      stream: true,
    });
    const { tools: _tools, ...withoutTools } = request;
    expect(adaptRequest(withoutTools, PROVIDER_PROFILES['llama-cpp'])).not.toHaveProperty('tool_choice');
  });

  it('litellm and ollama keep stream_options but fill the content; generic does both', () => {
    const litellm = adaptRequest(request, PROVIDER_PROFILES.litellm);
    expect(litellm.stream_options).toEqual({ include_usage: true });
    expect(litellm.messages[1]).toEqual({ role: 'assistant', content: '', tool_calls: [call] });
    expect(adaptRequest(request, PROVIDER_PROFILES.generic)).not.toHaveProperty('stream_options');
    // The input is never changed.
    expect(request.messages[1]!.content).toBeNull();
  });

  it("the agent's choices win over the worker's; the key is read from the variable it names", () => {
    expect(resolveProvider(undefined, {})).toEqual({
      profile: 'openai',
      api: 'chat_completions',
    });
    expect(
      resolveProvider(
        { base_url: 'http://127.0.0.1:8080/v1', profile: 'llama-cpp', api_key_env: 'LOCAL_KEY' },
        { baseURL: 'https://api.example.com/v1', profile: 'vllm', api: 'responses' },
      ),
    ).toEqual({ baseURL: 'http://127.0.0.1:8080/v1', apiKeyEnv: 'LOCAL_KEY', profile: 'llama-cpp', api: 'responses' });
  });

  it('an agent file names a variable, never a key, and only known profiles', () => {
    const agent = (provider: unknown) => AgentDefinition.safeParse({ name: 'a', instructions: '', provider });
    expect(agent({ profile: 'llama-cpp', api_key_env: 'LOCAL_KEY' }).success).toBe(true);
    expect(agent({ api_key_env: 'sk-proj-abc123-def' }).error?.issues[0]?.message).toBe(
      'an environment variable name, not the key itself',
    );
    expect(agent({ profile: 'llamacpp' }).success).toBe(false);
    expect(agent({ base_url: 'file:///etc/passwd' }).success).toBe(false);
  });

  it('a worker refuses agents whose key variable it does not have, naming both', () => {
    const agents = [
      { name: 'local', provider: { profile: 'llama-cpp' as const } },
      { name: 'hosted', provider: { api_key_env: 'HOSTED_KEY' } },
    ];
    expect(missingProviderKeys(agents, {})).toEqual([
      "agent 'hosted' reads its provider's API key from HOSTED_KEY, which this worker's environment does not set",
    ]);
    expect(missingProviderKeys(agents, { HOSTED_KEY: 'k' })).toEqual([]);
    // Empty is unset: an empty bearer token is never sent.
    expect(missingProviderKeys(agents, { HOSTED_KEY: '' })).toHaveLength(1);
  });
});
