import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { occurrencesInDatabase } from '../support/database';
import { historyText } from '../support/history-text';
import { everythingLauncher } from '../../support/mcp-servers';
import { eventually } from '../support/wait';
import { pendingHeartbeatDetails } from '../../src/streaming/chunk-client';
import { RunFailedError } from '../../src/client/patchloop-client';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, failWith, reply } from '../../src/fake-model/steps';
import { AgentRegistry } from '../../src/agents/registry';
import type { AgentDefinitionInput } from '../../src/runtime';
import { listAgentsMcpTools } from '../../src/worker/mcp-tools-report';
import { workerProcesses } from '../support/worker-processes';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('secrets never leave the worker', () => {
  it('a provider that echoes the API key (401, a retried 429, a junk stream line) leaves it in neither history nor worker output', async () => {
    // Shaped like no provider key: only the configured-key redaction can remove it.
    const key = `canary-key-${randomUUID()}`;
    const canary = `canary-${randomUUID()}`;
    const fake = await FakeModelServer.start({
      script: [
        // A retryable 429 and a broken stream line that both quote the key, then a real answer.
        failWith(429, {
          message: `Rate limit reached for key (${canary}-429)`,
          echoKey: true,
          headers: { 'retry-after-ms': '100' },
        }),
        reply(['fine'], { fault: { kind: 'junk', afterChunks: 0, line: `not json: key=${key} (${canary}-junk)` } }),
        reply('the answer'),
        // Then a 401 that echoes it: the run fails for good.
        failWith(401, { message: `Incorrect API key provided (${canary}-401)`, echoKey: true }),
      ],
    });
    const { client, start } = await workerProcesses(
      fake,
      [{ name: 'plain', instructions: 'Answer.', tools: [] }],
      'secrets',
      cleanups,
    );
    const worker = await start({ OPENAI_API_KEY: key });

    const retried = await client.start({ agent: 'plain', input: 'hi' });
    expect((await retried.result()).transcript.slice(1)).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'the answer' },
    ]);
    const failed = await client.start({ agent: 'plain', input: 'hi again' });
    const error = (await failed.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('ProviderAuthFailed');
    expect(error.message).toContain(`Incorrect API key provided (${canary}-401): [REDACTED]`);
    // The provider really received the key: the test would catch a leak.
    expect(fake.requests.every((request) => request.headers['authorization'] === `Bearer ${key}`)).toBe(true);

    const histories = historyText([await retried.workflow.fetchHistory(), await failed.workflow.fetchHistory()]);
    expect(histories).toContain(`${canary}-401`);
    expect(histories).not.toContain(key);
    await worker.kill('SIGTERM');
    // Positive control: the failure texts are in the database, the key is not.
    expect(occurrencesInDatabase(`${canary}-401`)).toBeGreaterThan(0);
    expect(occurrencesInDatabase(key)).toBe(0);
    const output = worker.output();
    // The failures are in the worker's log (one line each), their text redacted.
    expect(output).toContain('activity llmPhase failed');
    expect(output).toContain(`${canary}-401`);
    expect(output).not.toContain(key);
    fake.assertDone();
  });

  it("an MCP server's ${VAR} secret (its env echoed by server-everything's get-env, in its stderr when it fails to start, in a checkpoint) leaves the worker redacted only", async () => {
    const canary = `mcp-canary-${randomUUID()}`;
    const everything = {
      name: 'everything',
      command: process.execPath,
      args: [everythingLauncher],
      env: { MCP_TOKEN: '${PATCHLOOP_TEST_MCP_CANARY}' },
      tools: ['get-env', 'trigger-long-running-operation'],
    };
    const broken = {
      name: 'broken',
      command: process.execPath,
      args: ['-e', 'console.error(`cannot start with token ${process.env.MCP_TOKEN}`); process.exit(3)'],
      env: { MCP_TOKEN: '${PATCHLOOP_TEST_MCP_CANARY}' },
    };
    const agents = [
      { name: 'mcp-secret', instructions: 'Check.', mcp_servers: [everything] },
      { name: 'mcp-broken', instructions: 'Check.', mcp_servers: [broken] },
    ] as AgentDefinitionInput[];
    const fake = await FakeModelServer.start({
      script: [
        // get-env finishes first and is checkpointed while the long call still runs.
        callTools([
          { id: 'e1', name: 'get-env', arguments: '{}' },
          { id: 'l1', name: 'trigger-long-running-operation', arguments: '{"duration": 4, "steps": 8}' },
        ]),
        reply('checked'),
      ],
    });
    const { client, start } = await workerProcesses(fake, agents, 'mcp-secrets', cleanups);
    const worker = await start({ PATCHLOOP_TEST_MCP_CANARY: canary });

    const run = await client.start({ agent: 'mcp-secret', input: 'check the environment' });
    // While the long call runs, the server holds the batch's checkpoint with get-env's result: redacted.
    const checkpoint = await eventually(async () => {
      const details = await pendingHeartbeatDetails(run.workflow);
      const withResult = details.find((entry) => Array.isArray(entry['done']) && entry['done'].length === 1);
      return withResult ? JSON.stringify(withResult) : undefined;
    });
    expect(checkpoint).toContain('MCP_TOKEN');
    expect(checkpoint).toContain('[REDACTED]');
    expect(checkpoint).not.toContain(canary);
    const result = await run.result();
    expect(result.status).toBe('completed');
    // The server had the secret (the variable is there), and the model got it redacted.
    const environment = fake.requests[1]!.body.messages.find(
      (message) => message.role === 'tool' && message.tool_call_id === 'e1',
    );
    expect(JSON.parse(String(environment!.content))).toMatchObject({ MCP_TOKEN: '[REDACTED]' });

    const failed = await client.start({ agent: 'mcp-broken', input: 'check' });
    const error = (await failed.result().catch((caught: unknown) => caught)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('McpServerUnavailable');
    expect(error.message).toContain('cannot start with token [REDACTED]');

    // What `patchloop mcp tools` prints for the same server is redacted the same way.
    const registry = new AgentRegistry([], agents);
    const [listing] = await listAgentsMcpTools(
      registry,
      ['mcp-broken'],
      { model: 'fake-model', modelWindows: {} },
      { ...process.env, PATCHLOOP_TEST_MCP_CANARY: canary },
    );
    expect(JSON.stringify(listing)).toContain('cannot start with token [REDACTED]');
    expect(JSON.stringify(listing)).not.toContain(canary);

    const histories = historyText([await run.workflow.fetchHistory(), await failed.workflow.fetchHistory()]);
    expect(histories).toContain('${PATCHLOOP_TEST_MCP_CANARY}');
    expect(histories).not.toContain(canary);
    await worker.kill('SIGTERM');
    expect(occurrencesInDatabase(canary)).toBe(0);
    expect(occurrencesInDatabase('cannot start with token [REDACTED]')).toBeGreaterThan(0);
    expect(worker.output()).not.toContain(canary);
  });
});
