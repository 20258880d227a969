import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type ListTasksRequest, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import { createKey } from '../../src/gateway/keys';
import type { AgentDefinitionInput } from '../../src/runtime';
import { freePort } from '../../src/worker/free-port';
import { a2aClient, sendRequest, streamLines, taskLine, updateLine, userMessage } from '../support/a2a';
import { startCliProcess } from '../support/cli';
import { clientOn, temporalAddress } from '../support/temporal';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';
import { FakeModelServer } from '../../src/fake-model/server';
import { testWithWorld } from '../support/fixtures';
import { citiesWorld, runProcess } from '../../support/gateway-world';
import { eventually } from '../support/wait';
import { repositoryRoot, venvPython } from '../../support/repository';

const { transfers, tools, agents } = citiesWorld();

/** ListTasks with no filter: the caller's tasks of the agent, newest first. */
const listAll = (): ListTasksRequest => ({
  tenant: '',
  contextId: '',
  status: 0,
  pageSize: 50,
  pageToken: '',
  statusTimestampAfter: undefined,
});

const it = testWithWorld({ agents, tools });

const folder = mkdtempSync(join(tmpdir(), 'a2a-gateway-'));
const keysFile = join(folder, 'keys.json');
// Principals of this file only: listings by principal span the namespace the test files share.
const tag = randomUUID().slice(0, 8);
const ALICE = `alice-${tag}`;
const BOB = `bob-${tag}`;
const alice = createKey(keysFile, ALICE).key;
const bob = createKey(keysFile, BOB).key;
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('A2A on the gateway', () => {
  let gateway: { url: string; close(): Promise<void> };
  beforeAll(() => () => gateway?.close());

  it('serves a public agent card per agent, with both bindings, streaming and the Bearer scheme', async ({ world }) => {
    gateway = await listen(
      createPatchloopGateway({ client: world.client, keysFile, agents, log: () => undefined }).app,
      '127.0.0.1',
      0,
    );
    const response = await fetch(`${gateway.url}/a2a/assistant/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      name: 'assistant',
      description: 'You answer questions about cities.',
      supportedInterfaces: [
        { url: `${gateway.url}/a2a/assistant`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: `${gateway.url}/a2a/assistant`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ],
      version: '1.0.0',
      capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
      securitySchemes: {
        patchloopKey: {
          httpAuthSecurityScheme: { description: 'A patchloop API key (patchloop keys create)', scheme: 'Bearer' },
        },
      },
      securityRequirements: [{ schemes: { patchloopKey: {} } }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [
        expect.objectContaining({
          id: 'assistant',
          name: 'assistant',
          description: 'You answer questions about cities.',
        }),
        expect.objectContaining({ id: 'assistant.lookup', name: 'lookup', tags: ['tool'] }),
        expect.objectContaining({ id: 'assistant.transfer', name: 'transfer', tags: ['tool'] }),
      ],
    });
  });

  it('SendMessage (JSON-RPC) runs a task to its answer; GetTask, ListTasks and a context that goes on', async ({
    world,
  }) => {
    world.fake.enqueue(callTools([toolCall('c1', 'lookup', { city: 'Paris' })]), reply('Paris is the capital.'));
    const client = await a2aClient(gateway.url, 'assistant', 'JSONRPC', alice);
    const task = (await client.sendMessage(sendRequest(userMessage('What is Paris?')))) as Task;
    expect(taskLine(task)).toBe('task COMPLETED | answer=Paris is the capital.');
    expect(task.contextId).toMatch(/^ctx-/);
    expect(task.id.startsWith(`${task.contextId}~`)).toBe(true);
    expect(taskLine(await client.getTask({ tenant: '', id: task.id }))).toBe(
      'task COMPLETED | answer=Paris is the capital.',
    );

    // The same context: the new task's run starts from the first one's conversation.
    world.fake.enqueue(reply('It has 2 million people.'));
    const next = (await client.sendMessage(
      sendRequest(userMessage('How many people?', { contextId: task.contextId })),
    )) as Task;
    expect(taskLine(next)).toBe('task COMPLETED | answer=It has 2 million people.');
    expect(next.contextId).toBe(task.contextId);
    const seen = world.fake.requests
      .at(-1)!
      .body.messages.map((message) => `${message.role}: ${message.content ?? ''}`);
    // One system message, the agent's own: the earlier task's is not carried over (conversationAfter).
    expect(seen).toEqual([
      `system: ${world.fake.requests[0]!.body.messages[0]!.content}`,
      'user: What is Paris?',
      'assistant: ',
      'tool: "Paris: capital of France"',
      'assistant: Paris is the capital.',
      'user: How many people?',
    ]);

    const listed = await client.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: 0,
      pageSize: 1,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((one) => one.id)).toEqual([next.id]);
    expect(listed.nextPageToken).toBe('1');
    const second = await client.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: 0,
      pageSize: 1,
      pageToken: listed.nextPageToken,
      statusTimestampAfter: undefined,
    });
    expect(second.tasks.map((one) => one.id)).toEqual([task.id]);
    expect(second.nextPageToken).toBe('');
  });

  it('SendStreamingMessage (HTTP+JSON) streams the task, its updates and its answer, and ends', async ({ world }) => {
    world.fake.enqueue(callTools([toolCall('c2', 'lookup', { city: 'Lyon' })]), reply('Lyon is not the capital.'));
    const client = await a2aClient(gateway.url, 'assistant', 'HTTP+JSON', alice);
    const lines = await streamLines(client.sendMessageStream(sendRequest(userMessage('And Lyon?'))));
    expect(lines).toEqual([
      'task SUBMITTED',
      'status WORKING',
      'status WORKING | calling lookup',
      'artifact answer=Lyon is not the capital.',
      'status COMPLETED',
    ]);
  });
  it('a call that waits for approval is INPUT_REQUIRED, and a message on the task decides it', async ({ world }) => {
    world.fake.enqueue(callTools([toolCall('t1', 'transfer', { to: 'bob', amount: 5 })]), reply('Sent.'));
    const client = await a2aClient(gateway.url, 'assistant', 'JSONRPC', alice);
    const lines: string[] = [];
    let taskId = '';
    const streamed = streamLines(client.sendMessageStream(sendRequest(userMessage('Pay bob 5.'))), (line) =>
      lines.push(line),
    );
    await eventually(
      () => (lines.some((line) => line.startsWith('status INPUT_REQUIRED')) ? true : undefined),
      60_000,
      'input required',
    );
    const [task] = (await client.listTasks(listAll())).tasks;
    taskId = task!.id;
    expect(taskLine(await client.getTask({ tenant: '', id: taskId }))).toBe(
      'task INPUT_REQUIRED | waiting for a decision on transfer {"to":"bob","amount":5}: answer "approve" or "reject: REASON"',
    );
    // Another binding answers: the decision goes to the run, whichever request follows it.
    const rest = await a2aClient(gateway.url, 'assistant', 'HTTP+JSON', alice);
    const decided = (await rest.sendMessage(sendRequest(userMessage('approve', { taskId })))) as Task;
    expect(taskLine(decided)).toBe('task COMPLETED | answer=Sent.');
    expect(await streamed).toEqual([
      'task SUBMITTED',
      'status WORKING',
      'status INPUT_REQUIRED | waiting for a decision on transfer {"to":"bob","amount":5}: answer "approve" or "reject: REASON"',
      'status WORKING | transfer approved',
      'status WORKING | calling transfer',
      'artifact answer=Sent.',
      'status COMPLETED',
    ]);
    expect(transfers).toEqual([{ to: 'bob', amount: 5 }]);
  });

  it("CancelTask aborts the run (again: the same answer); another principal's task is not found", async ({ world }) => {
    world.fake.enqueue(callTools([toolCall('t2', 'transfer', { to: 'eve', amount: 9 })]));
    const client = await a2aClient(gateway.url, 'assistant', 'HTTP+JSON', alice);
    const started = (await client.sendMessage(sendRequest(userMessage('Pay eve 9.'), true))) as Task;
    expect(taskLine(started)).toBe('task SUBMITTED');
    await eventually(
      async () =>
        (await client.getTask({ tenant: '', id: started.id })).status?.state === TaskState.TASK_STATE_INPUT_REQUIRED
          ? true
          : undefined,
      60_000,
      'the task to wait for a decision',
    );

    // Bob sees nothing of it, on either binding, and changes nothing.
    for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
      const other = await a2aClient(gateway.url, 'assistant', binding, bob);
      await expect(other.getTask({ tenant: '', id: started.id })).rejects.toThrow(`no task ${started.id}`);
      await expect(other.cancelTask({ tenant: '', id: started.id, metadata: undefined })).rejects.toThrow(
        `no task ${started.id}`,
      );
      await expect(other.sendMessage(sendRequest(userMessage('approve', { taskId: started.id })))).rejects.toThrow(
        `no task ${started.id}`,
      );
      expect((await other.listTasks(listAll())).tasks).toEqual([]);
    }

    const canceled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(taskLine(canceled)).toBe('task CANCELED | canceled by the A2A client');
    const again = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(taskLine(again)).toBe('task CANCELED | canceled by the A2A client');
    expect(transfers).toEqual([{ to: 'bob', amount: 5 }]);
  });
  it("bad input gets the binding's error and changes nothing", async ({ world }) => {
    const before = (await world.client.listRuns({ principal: ALICE, limit: 100 })).length;
    const requestsBefore = world.fake.requests.length;
    const post = async (path: string, body: string, key = alice, headers: Record<string, string> = {}) => {
      const response = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'A2A-Version': '1.0',
          Authorization: `Bearer ${key}`,
          ...headers,
        },
        body,
      });
      return { status: response.status, body: await response.json(), auth: response.headers.get('www-authenticate') };
    };
    const send = (text: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'SendMessage',
        params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text }] } },
      });
    const jsonRpcError = (code: number, message: string, id: number | null = null) => ({
      jsonrpc: '2.0',
      id,
      error: { code, message },
    });
    expect(await post('/a2a/assistant', '{"jsonrpc": "2.0", "method": ')).toEqual({
      status: 200,
      body: jsonRpcError(-32700, 'Invalid JSON payload.'),
      auth: null,
    });
    expect(await post('/a2a/assistant', JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'Fly', params: {} }))).toEqual({
      status: 200,
      body: jsonRpcError(-32601, 'Invalid method.', 8),
      auth: null,
    });
    expect(await post('/a2a/nobody', send('hi'))).toEqual({
      status: 404,
      body: jsonRpcError(-32601, 'no agent named "nobody" here (agents: assistant)'),
      auth: null,
    });
    expect(await post('/a2a/assistant', send('x'.repeat(1024 * 1024)))).toEqual({
      status: 413,
      body: jsonRpcError(-32600, 'the request is larger than 1048576 bytes'),
      auth: null,
    });
    expect(await post('/a2a/assistant', send('hi'), 'pl_000000000000_wrongwrongwrongwrongwrongwrongwr')).toEqual({
      status: 401,
      body: jsonRpcError(-32600, 'the API key is not valid'),
      auth: 'Bearer realm="patchloop"',
    });
    expect(
      await post('/a2a/assistant/message:send', send('hi'), 'pl_000000000000_wrongwrongwrongwrongwrongwrongwr'),
    ).toEqual({
      status: 401,
      body: { error: { code: 401, status: 'UNAUTHENTICATED', message: 'the API key is not valid', details: [] } },
      auth: 'Bearer realm="patchloop"',
    });
    expect(await post('/a2a/assistant/message:send', '{"message": ')).toEqual({
      status: 400,
      body: { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload.', details: [] } },
      auth: null,
    });
    const [own] = await world.client.listRuns({ principal: ALICE, limit: 1 });
    const stranger = await post(
      '/a2a/assistant',
      JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: own!.workflow_id } }),
      bob,
    );
    expect((stranger.body as { error: unknown }).error).toEqual({
      code: -32001,
      message: `no task ${own!.workflow_id}`,
      data: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' },
      ],
    });
    const strangerRest = await fetch(`${gateway.url}/a2a/assistant/tasks/${own!.workflow_id}`, {
      headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${bob}` },
    });
    expect(strangerRest.status).toBe(404);
    expect(((await strangerRest.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');

    expect((await world.client.listRuns({ principal: ALICE, limit: 100 })).length).toBe(before);
    expect((await world.client.listRuns({ principal: BOB, limit: 100 })).length).toBe(0);
    expect(world.fake.requests.length).toBe(requestsBefore);
  });
  it("Python's a2a-sdk client streams, reads and lists tasks on both bindings (cross-SDK)", async ({ world }) => {
    for (const binding of ['JSONRPC', 'HTTP+JSON']) {
      world.fake.enqueue(
        callTools([toolCall(`p-${binding}`, 'lookup', { city: 'Nice' })]),
        reply(`Nice, by ${binding}.`),
      );
      const run = await runProcess(venvPython, [
        join(repositoryRoot, 'test/support/a2a_client.py'),
        `${gateway.url}/a2a/assistant`,
        alice,
        binding,
        'And Nice?',
      ]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout.trim().split('\n')).toEqual([
        'task SUBMITTED',
        'status WORKING',
        'status WORKING | calling lookup',
        `artifact answer=Nice, by ${binding}.`,
        'status COMPLETED',
        `get task COMPLETED | answer=Nice, by ${binding}.`,
        'list [True]',
      ]);
    }
  });
  it('a client that subscribes again after the gateway process was killed mid-stream gets every later update once', async ({
    world,
  }) => {
    const agentsFile = join(folder, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify(agents));
    const port = await freePort();
    const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const serve = () =>
      startCliProcess(['serve', '--port', String(port), '--keys-file', keysFile, '--agents', agentsFile], env, {
        text: 'patchloop gateway at',
        what: 'the gateway to listen',
        timeoutMs: 60_000,
      });
    const url = `http://127.0.0.1:${port}`;
    const first = await serve();
    world.fake.enqueue(callTools([toolCall('t3', 'transfer', { to: 'carol', amount: 7 })]), reply('Paid carol.'));
    const client = await a2aClient(url, 'assistant', 'JSONRPC', alice);
    const before: string[] = [];
    let taskId = '';
    const broken = (async () => {
      for await (const update of client.sendMessageStream(sendRequest(userMessage('Pay carol 7.')))) {
        if (update.payload?.$case === 'task') taskId = update.payload.value.id;
        before.push(updateLine(update));
      }
    })().then(
      () => 'ended',
      () => 'broken',
    );
    await eventually(() => (before.length === 3 ? true : undefined), 60_000, 'the stream to reach input required');
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    expect(await broken).toBe('broken');
    expect(before).toEqual([
      'task SUBMITTED',
      'status WORKING',
      'status INPUT_REQUIRED | waiting for a decision on transfer {"to":"carol","amount":7}: answer "approve" or "reject: REASON"',
    ]);

    const second = await serve();
    try {
      const again = await a2aClient(url, 'assistant', 'HTTP+JSON', alice);
      const after: string[] = [];
      const resumed = streamLines(again.resubscribeTask({ tenant: '', id: taskId }), (line) => after.push(line));
      await eventually(() => (after.length === 1 ? true : undefined), 60_000, 'the current task');
      // The decision comes while the client follows again: what it causes reaches the client once.
      const decided = (await again.sendMessage(sendRequest(userMessage('approve: looks right', { taskId })))) as Task;
      expect(taskLine(decided)).toBe('task COMPLETED | answer=Paid carol.');
      expect(await resumed).toEqual([
        'task INPUT_REQUIRED | waiting for a decision on transfer {"to":"carol","amount":7}: answer "approve" or "reject: REASON"',
        'status WORKING | transfer approved',
        'status WORKING | calling transfer',
        'artifact answer=Paid carol.',
        'status COMPLETED',
      ]);
      expect(transfers.filter((transfer) => transfer.to === 'carol')).toEqual([{ to: 'carol', amount: 7 }]);
    } finally {
      await second.stop();
    }
  });
  it("docs/gateway.md's A2A examples (curl and Python) run as written, against this gateway", async ({ world }) => {
    const page = readFileSync(join(repositoryRoot, 'docs/gateway.md'), 'utf8');
    const section = page.slice(page.indexOf('\n## A2A\n'));
    // As written, but at this gateway's address instead of the default port.
    const here = (text: string) => text.replaceAll('http://127.0.0.1:8400', gateway.url);
    const curlBlock = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
    const commands = here(curlBlock)
      .replace(/\\\n\s*/g, ' ')
      .trim()
      .split('\n');
    expect(commands).toHaveLength(2);
    const card = await runProcess('bash', ['-c', commands[0]!], { KEY: alice });
    expect(JSON.parse(card.stdout)).toMatchObject({ name: 'assistant', capabilities: { streaming: true } });
    world.fake.enqueue(reply('Paris.'));
    const sent = await runProcess('bash', ['-c', commands[1]!], { KEY: alice });
    const answer = JSON.parse(sent.stdout) as { result: { task: Task & { status: { state: string } } } };
    expect(answer).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: {
        task: {
          status: { state: 'TASK_STATE_COMPLETED' },
          artifacts: [{ artifactId: 'answer', name: 'answer', parts: [{ text: 'Paris.', mediaType: 'text/plain' }] }],
        },
      },
    });
    expect(answer.result.task.id.startsWith(`${answer.result.task.contextId}~`)).toBe(true);

    const python = /```python\n([\s\S]*?)```/.exec(section)![1]!;
    const script = join(folder, 'a2a_example.py');
    writeFileSync(script, here(python));
    world.fake.enqueue(reply('Paris, again.'));
    const run = await runProcess(venvPython, [script], { KEY: alice });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe('state: TASK_STATE_WORKING\nanswer: Paris, again.\nstate: TASK_STATE_COMPLETED\n');
  });

  it("a start over the principal's limit gets Retry-After (429 on HTTP+JSON) and starts nothing", async ({ world }) => {
    const carol = createKey(keysFile, `carol-${tag}`).key;
    const limited = await listen(
      createPatchloopGateway({
        client: world.client,
        keysFile,
        agents,
        limits: { runsPerMinute: 1 },
        log: () => undefined,
      }).app,
      '127.0.0.1',
      0,
    );
    try {
      world.fake.enqueue(reply('One.'));
      const client = await a2aClient(limited.url, 'assistant', 'JSONRPC', carol);
      expect(taskLine((await client.sendMessage(sendRequest(userMessage('One?')))) as Task)).toBe(
        'task COMPLETED | answer=One.',
      );
      const send = (path: string, body: unknown) =>
        fetch(`${limited.url}${path}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${carol}` },
          body: JSON.stringify(body),
        });
      const message = { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'Two?' }] };
      const rest = await send('/a2a/assistant/message:send', { message });
      expect(rest.status).toBe(429);
      expect(Number(rest.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await rest.json()) as { error: { message: string } }).error.message).toBe(
        `rate limited: carol-${tag} started 1 runs in the last minute (the limit is 1)`,
      );
      const rpc = await send('/a2a/assistant', { jsonrpc: '2.0', id: 3, method: 'SendMessage', params: { message } });
      expect(rpc.status).toBe(200);
      expect(Number(rpc.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await rpc.json()) as { error: unknown }).error).toMatchObject({
        code: -32004,
        message: `rate limited: carol-${tag} started 1 runs in the last minute (the limit is 1)`,
      });
      expect(await world.client.listRuns({ principal: `carol-${tag}`, limit: 10 })).toHaveLength(1);
    } finally {
      await limited.close();
    }
  });
  it('a stream goes on through kill -9 of the worker mid-call: every update once', async () => {
    // Worker processes of their own (a real kill -9), on their own task queue, behind an in-process gateway.
    const fake = await FakeModelServer.start({
      script: [
        callTools([toolCall('a1', 'add', { a: 2, b: 3 })]),
        { kind: 'hang', chunks: ['The sum'] },
        reply(['The sum', ' is 5.']),
      ],
    });
    const taskQueue = `a2a-crash-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    const adders: AgentDefinitionInput[] = [
      { name: 'adder', instructions: 'You add.', tools: ['add'], limits: { heartbeat_timeout_seconds: 2 } },
    ];
    const workers: WorkerProcess[] = [];
    const start = async () => {
      workers.push(await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents: adders }));
      return workers.at(-1)!;
    };
    const own = await listen(
      createPatchloopGateway({ client, keysFile, agents: adders, log: () => undefined }).app,
      '127.0.0.1',
      0,
    );
    try {
      const first = await start();
      const a2a = await a2aClient(own.url, 'adder', 'HTTP+JSON', alice);
      const streamed = streamLines(a2a.sendMessageStream(sendRequest(userMessage('Add 2 and 3.'))));
      // The second model call is under way (its reply hangs): its worker dies.
      await fake.waitForRequests(2);
      await first.kill('SIGKILL');
      await start();
      expect(await streamed).toEqual([
        'task SUBMITTED',
        'status WORKING',
        'status WORKING | calling add',
        'artifact answer=The sum is 5.',
        'status COMPLETED',
      ]);
      expect(fake.requests).toHaveLength(3);
    } finally {
      await own.close();
      for (const worker of workers) await worker.kill('SIGKILL');
      await client.close();
      await fake.close();
    }
  });
});
