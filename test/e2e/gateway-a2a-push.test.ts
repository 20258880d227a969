import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { TaskState, type Task, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { WorkflowFailedError } from '@temporalio/client';
import { beforeAll, describe, expect } from 'vitest';
import { z } from 'zod';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { FakeModelServer } from '../../src/fake-model/server';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import type { AgentDefinitionInput, A2aPushWatcherResult } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { a2aClient, sendRequest, taskLine, userMessage } from '../support/a2a';
import { testWithWorld } from '../support/fixtures';
import { gatewayKeys } from '../support/gateway-keys';
import { runProcess } from '../../support/gateway-world';
import { clientOn, temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';
import { repositoryRoot, venvPython } from '../../support/repository';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

/** One POST a receiver got. */
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** What the receiver answered. */
  status: number;
}

/**
 * A real HTTP receiver of push notifications: every POST recorded, answered by its path: `/ok/...` 200,
 * `/flaky/...` 500 (with `Retry-After: 1`) to the first two attempts of each delivery then 200,
 * `/bad/...` 400.
 */
async function startReceiver() {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '';
      const delivery = String(request.headers['patchloop-delivery']);
      const tries = received.filter((one) => one.path === path && one.headers['patchloop-delivery'] === delivery);
      const status = path.startsWith('/bad/') ? 400 : path.startsWith('/flaky/') && tries.length < 2 ? 500 : 200;
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      if (status === 500) response.setHeader('Retry-After', '1');
      response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 400 ? 'no such hook' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    received,
    /** The bodies delivered (answered 2xx) to a path, as lines. */
    delivered: (path: string) => received.filter((one) => one.path === path && one.status === 200),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const pushDocs = (() => {
  const page = readFileSync(join(repositoryRoot, 'docs/gateway.md'), 'utf8');
  return page.slice(page.indexOf('\n### Push notifications\n'), page.indexOf('\n## The Responses API\n'));
})();
const docBlock = (language: string) => new RegExp(`\`\`\`${language}\n([\\s\\S]*?)\`\`\``).exec(pushDocs)![1]!;
/** docs/gateway.md's Node check of `Patchloop-Signature`, as a receiver runs it. */
const docVerify = new Function('require', `${docBlock('js')}\nreturn verify;`)(createRequire(__filename)) as (
  token: string,
  header: string,
  body: Buffer,
) => boolean;

/** What a receiver does with a push: checks its signature with the token (docs/gateway.md's check). */
function verified(one: Received, token: string): boolean {
  return docVerify(token, String(one.headers['patchloop-signature'] ?? ''), Buffer.from(one.body));
}

/** docs/gateway.md's Python check of each push, with a token: what it says of each. */
async function verifiedInPython(pushes: Received[], token: string): Promise<boolean[]> {
  const script = join(folder, 'verify.py');
  const cases = pushes.map((one) => ({ header: one.headers['patchloop-signature'], body: one.body }));
  writeFileSync(
    script,
    `import hashlib, hmac, json, sys, time\n\n${docBlock('python')}\n\n` +
      `cases = json.load(open(sys.argv[1]))\n` +
      `print(json.dumps([verify(sys.argv[2], one["header"], one["body"].encode()) for one in cases]))\n`,
  );
  writeFileSync(join(folder, 'cases.json'), JSON.stringify(cases));
  const run = await runProcess(venvPython, [script, join(folder, 'cases.json'), token]);
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as boolean[];
}

/** A push's body as one line: the state it tells of, its message, and the task's artifacts when a task. */
function pushLine(one: Received): string {
  const body = JSON.parse(one.body) as {
    task?: { status: { state: string }; artifacts: Array<{ artifactId: string; parts: Array<{ text: string }> }> };
    statusUpdate?: { status: { state: string; message?: { parts: Array<{ text: string }> } } };
  };
  if (body.task)
    return [
      `task ${body.task.status.state}`,
      ...body.task.artifacts.map((artifact) => `${artifact.artifactId}=${artifact.parts.map((p) => p.text).join('')}`),
    ].join(' | ');
  const message = body.statusUpdate?.status.message?.parts.map((part) => part.text).join('');
  return `status ${body.statusUpdate?.status.state}${message ? ` | ${message}` : ''}`;
}

const tools = [
  defineTool({
    name: 'transfer',
    description: 'Sends money.',
    parameters: z.object({ to: z.string(), amount: z.number() }),
    execute: (args) => `sent ${args.amount} to ${args.to}`,
  }),
];
const agents: AgentDefinitionInput[] = [
  { name: 'payer', instructions: 'You pay people.', tools: ['transfer'], needs_approval: ['transfer'] },
];
const it = testWithWorld({ agents, tools });

const { folder, keysFile, alice, bob } = gatewayKeys(agents);

/** A push config as the JS SDK's client sends it. */
function pushConfig(taskId: string, id: string, url: string, token: string): TaskPushNotificationConfig {
  return { tenant: '', id, taskId, url, token, authentication: undefined };
}

/** Waits until the task asks for a decision. */
async function inputRequired(client: Client, taskId: string): Promise<void> {
  await eventually(
    async () =>
      (await client.getTask({ tenant: '', id: taskId })).status?.state === TaskState.TASK_STATE_INPUT_REQUIRED
        ? true
        : undefined,
    60_000,
    'the task to wait for a decision',
  );
}

const approvalLine =
  'status TASK_STATE_INPUT_REQUIRED | waiting for a decision on transfer {"to":"bob","amount":5}: answer "approve" or "reject: REASON"';

describe('A2A push notifications on the gateway', () => {
  let gateway: { url: string; close(): Promise<void> } | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    return async () => {
      await gateway?.close();
      await receiver.close();
    };
  });
  /** The file's gateway, in front of the world's client (opened by the first test that needs it). */
  const served = async (world: { client: Parameters<typeof createPatchloopGateway>[0]['client'] }) => {
    gateway ??= await listen(
      createPatchloopGateway({ client: world.client, keysFile, agents, log: () => undefined }).app,
      '127.0.0.1',
      0,
    );
    return gateway.url;
  };

  it('a config sent with the message (JS SDK, JSON-RPC): every change once, in order, signed; Get, List; another principal finds nothing', async ({
    world,
  }) => {
    const card = await (await fetch(`${await served(world)}/a2a/payer/.well-known/agent-card.json`)).json();
    expect(card).toMatchObject({ capabilities: { streaming: true, pushNotifications: true } });

    world.fake.enqueue(callTools([toolCall('t1', 'transfer', { to: 'bob', amount: 5 })]), reply('Paid bob.'));
    const client = await a2aClient(await served(world), 'payer', 'JSONRPC', alice);
    const request = sendRequest(userMessage('Pay bob 5.'), true);
    request.configuration!.taskPushNotificationConfig = pushConfig('', 'hook-1', `${receiver.url}/ok/1`, 'tok-one');
    const task = (await client.sendMessage(request)) as Task;
    await inputRequired(client, task.id);
    await eventually(() => (receiver.delivered('/ok/1').length === 2 ? true : undefined), 60_000, 'two pushes');

    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' })).toEqual(
      pushConfig(task.id, 'hook-1', `${receiver.url}/ok/1`, 'tok-one'),
    );
    await eventually(
      async () =>
        (await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }))
          .configs.length === 1
          ? true
          : undefined,
      30_000,
      'the config to be listed',
    );
    for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
      const other = await a2aClient(await served(world), 'payer', binding, bob);
      const notFound = `no task ${task.id}`;
      await expect(other.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' })).rejects.toThrow(
        notFound,
      );
      await expect(
        other.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }),
      ).rejects.toThrow(notFound);
      await expect(
        other.createTaskPushNotificationConfig(pushConfig(task.id, 'evil', `${receiver.url}/ok/evil`, 'x')),
      ).rejects.toThrow(notFound);
      await expect(
        other.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' }),
      ).rejects.toThrow(notFound);
    }

    const decided = (await client.sendMessage(sendRequest(userMessage('approve', { taskId: task.id })))) as Task;
    expect(taskLine(decided)).toBe('task COMPLETED | answer=Paid bob.');
    await eventually(() => (receiver.delivered('/ok/1').length === 4 ? true : undefined), 60_000, 'four pushes');
    const pushes = receiver.delivered('/ok/1');
    expect(pushes.map(pushLine)).toEqual([
      'status TASK_STATE_WORKING',
      approvalLine,
      'status TASK_STATE_WORKING | transfer approved',
      'task TASK_STATE_COMPLETED | answer=Paid bob.',
    ]);
    for (const one of pushes) {
      expect(one.headers['x-a2a-notification-token']).toBe('tok-one');
      expect(one.headers['content-type']).toBe('application/a2a+json');
      expect(one.headers.authorization).toBeUndefined();
      expect(verified(one, 'tok-one')).toBe(true);
      expect(verified(one, 'another-token')).toBe(false);
    }
    expect(await verifiedInPython(pushes, 'tok-one')).toEqual([true, true, true, true]);
    expect(await verifiedInPython(pushes, 'another-token')).toEqual([false, false, false, false]);
    expect(new Set(pushes.map((one) => one.headers['patchloop-delivery'])).size).toBe(4);
    expect(receiver.received.filter((one) => one.path === '/ok/1')).toHaveLength(4);
    const watcher = world.client.temporal.workflow.getHandle(`${task.id}/a2a-push/hook-1`);
    expect(
      ((await watcher.result()) as A2aPushWatcherResult).deliveries.map((one) => [one.state, one.attempts]),
    ).toEqual([
      ['TASK_STATE_WORKING', 1],
      ['TASK_STATE_INPUT_REQUIRED', 1],
      ['TASK_STATE_WORKING', 1],
      ['TASK_STATE_COMPLETED', 1],
    ]);
    // A config that delivered its last change is still the task's, until deleted.
    expect(
      (await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }))
        .configs,
    ).toEqual([pushConfig(task.id, 'hook-1', `${receiver.url}/ok/1`, 'tok-one')]);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    await eventually(
      async () => {
        const listed = await client.listTaskPushNotificationConfig({
          tenant: '',
          taskId: task.id,
          pageSize: 0,
          pageToken: '',
        });
        const got = await client
          .getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' })
          .catch((error: Error) => error.message);
        return listed.configs.length === 0 && got === `no push notification config "hook-1" on task ${task.id}`
          ? true
          : undefined;
      },
      30_000,
      'the ended config to be deleted',
    );
  });

  it("Python's a2a-sdk client creates, reads and lists a config on a task that waits, on both bindings; the rest of its changes arrive", async ({
    world,
  }) => {
    for (const binding of ['JSONRPC', 'HTTP+JSON']) {
      world.fake.enqueue(
        callTools([toolCall(`p-${binding}`, 'transfer', { to: 'bob', amount: 5 })]),
        reply(`Paid, by ${binding}.`),
      );
      const path = `/ok/py-${binding}`;
      const run = await runProcess(venvPython, [
        join(repositoryRoot, 'test/support/a2a_push_client.py'),
        `${await served(world)}/a2a/payer`,
        alice,
        binding,
        `${receiver.url}${path}`,
        'tok-py',
        'Pay bob 5.',
      ]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      const lines = run.stdout.trim().split('\n');
      expect(lines.slice(0, 3)).toEqual(['created py True True', 'get py True', "list ['py']"]);
      const taskId = lines[3]!.replace('task ', '');
      const client = await a2aClient(await served(world), 'payer', 'JSONRPC', alice);
      expect(taskLine((await client.sendMessage(sendRequest(userMessage('approve', { taskId })))) as Task)).toBe(
        `task COMPLETED | answer=Paid, by ${binding}.`,
      );
      await eventually(() => (receiver.delivered(path).length === 2 ? true : undefined), 60_000, 'two pushes');
      expect(receiver.delivered(path).map(pushLine)).toEqual([
        'status TASK_STATE_WORKING | transfer approved',
        `task TASK_STATE_COMPLETED | answer=Paid, by ${binding}.`,
      ]);
      for (const one of receiver.delivered(path)) expect(verified(one, 'tok-py')).toBe(true);
    }
  });

  it('a receiver that fails twice gets each change once, recorded with its attempts; one that refuses is given up, visibly', async ({
    world,
  }) => {
    const client = await a2aClient(await served(world), 'payer', 'HTTP+JSON', alice);
    const start = async (id: string, path: string, answer: string) => {
      world.fake.enqueue(reply(answer));
      const request = sendRequest(userMessage('Say something.'));
      request.configuration!.taskPushNotificationConfig = pushConfig('', id, `${receiver.url}${path}`, 'tok-flaky');
      return (await client.sendMessage(request)) as Task;
    };
    const flaky = await start('flaky', '/flaky/1', 'Slowly.');
    const watcher = world.client.temporal.workflow.getHandle(`${flaky.id}/a2a-push/flaky`);
    const result = (await watcher.result()) as A2aPushWatcherResult;
    expect(result.deliveries.map((one) => [one.state, one.attempts, one.http_status])).toEqual([
      ['TASK_STATE_WORKING', 3, 200],
      ['TASK_STATE_COMPLETED', 3, 200],
    ]);
    const posts = receiver.received.filter((one) => one.path === '/flaky/1');
    expect(posts.map((one) => [pushLine(one), one.status])).toEqual([
      ['status TASK_STATE_WORKING', 500],
      ['status TASK_STATE_WORKING', 500],
      ['status TASK_STATE_WORKING', 200],
      ['task TASK_STATE_COMPLETED | answer=Slowly.', 500],
      ['task TASK_STATE_COMPLETED | answer=Slowly.', 500],
      ['task TASK_STATE_COMPLETED | answer=Slowly.', 200],
    ]);
    // A retried delivery carries the same delivery id; each is signed again, and verifies.
    expect(posts.map((one) => one.headers['patchloop-delivery'])).toEqual([
      ...Array(3).fill(result.deliveries[0]!.delivery_id),
      ...Array(3).fill(result.deliveries[1]!.delivery_id),
    ]);
    for (const one of posts) expect(verified(one, 'tok-flaky')).toBe(true);

    const refused = await start('refused', '/bad/1', 'Never heard.');
    const given = world.client.temporal.workflow.getHandle(`${refused.id}/a2a-push/refused`);
    const failure = await given.result().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as Error & { type?: string };
    expect({ type: cause.type, message: cause.message }).toEqual({
      type: 'NotifyRejected',
      message: 'gave up after 1 attempt(s): the receiver answered HTTP 400: no such hook',
    });
    expect((await given.describe()).status.name).toBe('FAILED');
    expect(receiver.received.filter((one) => one.path === '/bad/1').map(pushLine)).toEqual([
      'status TASK_STATE_WORKING',
    ]);
    // The config is still the task's: Get reads it, and the watcher's failure says what became of it.
    expect((await client.getTaskPushNotificationConfig({ tenant: '', taskId: refused.id, id: 'refused' })).url).toBe(
      `${receiver.url}/bad/1`,
    );
  });

  it('Create (HTTP+JSON, with authentication), Delete, limits; after Delete nothing more is delivered', async ({
    world,
  }) => {
    world.fake.enqueue(callTools([toolCall('t4', 'transfer', { to: 'bob', amount: 5 })]), reply('Paid again.'));
    const rest = await a2aClient(await served(world), 'payer', 'HTTP+JSON', alice);
    const rpc = await a2aClient(await served(world), 'payer', 'JSONRPC', alice);
    const task = (await rest.sendMessage(sendRequest(userMessage('Pay bob 5.'), true))) as Task;
    await inputRequired(rest, task.id);
    const kept: TaskPushNotificationConfig = {
      ...pushConfig(task.id, 'kept', `${receiver.url}/ok/kept`, ''),
      authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
    };
    expect(await rest.createTaskPushNotificationConfig(kept)).toEqual(kept);
    const dropped = pushConfig(task.id, 'dropped', `${receiver.url}/ok/dropped`, 'tok-dropped');
    expect(await rpc.createTaskPushNotificationConfig(dropped)).toEqual(dropped);
    // A config without an id gets one.
    const named = await rpc.createTaskPushNotificationConfig(pushConfig(task.id, '', `${receiver.url}/ok/named`, 't'));
    expect(named.id).toMatch(/^[0-9a-f-]{36}$/);

    for (const client of [rest, rpc]) {
      const refused = (config: Partial<TaskPushNotificationConfig>) =>
        client.createTaskPushNotificationConfig({
          ...pushConfig(task.id, 'x', `${receiver.url}/ok/x`, 't'),
          ...config,
        });
      await expect(refused({ url: 'ftp://example.com/hook' })).rejects.toThrow(
        'invalid push notification config: ✖ an http:// or https:// URL\n  → at url',
      );
      await expect(refused({ url: `http://example.com/${'a'.repeat(2048)}` })).rejects.toThrow(
        'invalid push notification config: ✖ Too big: expected string to have <=2048 characters\n  → at url',
      );
      await expect(refused({ token: 't'.repeat(513) })).rejects.toThrow(
        'invalid push notification config: ✖ Too big: expected string to have <=512 characters\n  → at token',
      );
      await expect(refused({ id: 'a/b' })).rejects.toThrow(
        "invalid push notification config: ✖ 1 to 100 letters, digits, '.', '_' or '-'\n  → at id",
      );
      await expect(refused({ id: 'kept' })).rejects.toThrow(
        `task ${task.id} already has a push notification config "kept": delete it first, or use another id`,
      );
    }

    await rest.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'dropped' });
    await rpc.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: named.id });
    // Deleting one the task does not have changes nothing.
    await rpc.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'dropped' });
    for (const client of [rest, rpc])
      await expect(
        client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'dropped' }),
      ).rejects.toThrow(`no push notification config "dropped" on task ${task.id}`);
    await eventually(
      async () => {
        const listed = await rest.listTaskPushNotificationConfig({
          tenant: '',
          taskId: task.id,
          pageSize: 0,
          pageToken: '',
        });
        return listed.configs.length === 1 ? listed.configs : undefined;
      },
      30_000,
      'the deleted configs to leave the list',
    ).then((configs) => expect(configs).toEqual([kept]));

    // Up to ten configs a task; the eleventh is refused.
    for (let index = 2; index <= 10; index++)
      await rpc.createTaskPushNotificationConfig(pushConfig(task.id, `more-${index}`, `${receiver.url}/ok/more`, 't'));
    await eventually(
      async () =>
        (await rpc.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs
          .length === 10
          ? true
          : undefined,
      30_000,
      'ten configs listed',
    );
    await expect(
      rest.createTaskPushNotificationConfig(pushConfig(task.id, 'eleventh', `${receiver.url}/ok/x`, 't')),
    ).rejects.toThrow(`task ${task.id} has 10 push notification configs, the most a task may have: delete one first`);

    // The message that answers the task may bring a config too, within the same limit.
    const approve = sendRequest(userMessage('approve', { taskId: task.id }));
    approve.configuration!.taskPushNotificationConfig = pushConfig(
      '',
      'on-answer',
      `${receiver.url}/ok/answer`,
      'tok-a',
    );
    await expect(rpc.sendMessage(approve)).rejects.toThrow(`task ${task.id} has 10 push notification configs`);
    await rpc.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'more-10' });
    await eventually(
      async () =>
        (await rpc.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs
          .length === 9
          ? true
          : undefined,
      30_000,
      'nine configs listed',
    );
    expect(taskLine((await rpc.sendMessage(approve)) as Task)).toBe('task COMPLETED | answer=Paid again.');
    await eventually(() => (receiver.delivered('/ok/kept').length === 2 ? true : undefined), 60_000, 'two pushes');
    await eventually(() => (receiver.delivered('/ok/more').length === 16 ? true : undefined), 60_000, 'the others');
    await eventually(() => (receiver.delivered('/ok/answer').length === 2 ? true : undefined), 60_000, 'its own');
    expect(receiver.delivered('/ok/answer').map(pushLine)).toEqual([
      'status TASK_STATE_WORKING | transfer approved',
      'task TASK_STATE_COMPLETED | answer=Paid again.',
    ]);
    const pushes = receiver.delivered('/ok/kept');
    expect(pushes.map(pushLine)).toEqual([
      'status TASK_STATE_WORKING | transfer approved',
      'task TASK_STATE_COMPLETED | answer=Paid again.',
    ]);
    for (const one of pushes) {
      expect(one.headers.authorization).toBe('Bearer receiver-secret');
      // No token: no token header, and nothing to sign with.
      expect(one.headers['x-a2a-notification-token']).toBeUndefined();
      expect(one.headers['patchloop-signature']).toBeUndefined();
    }
    expect(receiver.received.filter((one) => one.path === '/ok/dropped' || one.path === '/ok/named')).toEqual([]);
    // A task that ended has no change left to notify.
    await expect(
      rpc.createTaskPushNotificationConfig(pushConfig(task.id, 'late', `${receiver.url}/ok/late`, 't')),
    ).rejects.toThrow(`task ${task.id} has ended (TASK_STATE_COMPLETED): no change is left to notify`);
  });

  it('deliveries go on through kill -9 of the worker and a restart of the gateway after Create', async () => {
    const fake = await FakeModelServer.start({
      script: [callTools([toolCall('a1', 'add', { a: 2, b: 3 })]), reply('The sum is 5.')],
    });
    const taskQueue = `a2a-push-crash-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    const adders: AgentDefinitionInput[] = [
      { name: 'adder', instructions: 'You add.', tools: ['add'], needs_approval: ['add'] },
    ];
    const workers: WorkerProcess[] = [];
    const start = async () => {
      workers.push(await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents: adders }));
      return workers.at(-1)!;
    };
    const serve = () =>
      listen(createPatchloopGateway({ client, keysFile, agents: adders, log: () => undefined }).app, '127.0.0.1', 0);
    let own = await serve();
    try {
      const first = await start();
      const a2a = await a2aClient(own.url, 'adder', 'HTTP+JSON', alice);
      const request = sendRequest(userMessage('Add 2 and 3.'), true);
      request.configuration!.taskPushNotificationConfig = pushConfig('', 'crash', `${receiver.url}/ok/crash`, 'tok-c');
      const task = (await a2a.sendMessage(request)) as Task;
      await eventually(() => (receiver.delivered('/ok/crash').length === 2 ? true : undefined), 60_000, 'two pushes');
      // Between two changes: the worker dies, the gateway goes away; another of each comes.
      await first.kill('SIGKILL');
      await own.close();
      await start();
      own = await serve();
      const again = await a2aClient(own.url, 'adder', 'JSONRPC', alice);
      expect(
        taskLine((await again.sendMessage(sendRequest(userMessage('approve', { taskId: task.id })))) as Task),
      ).toBe('task COMPLETED | answer=The sum is 5.');
      // At least once: a push whose worker died after the receiver answered comes again, with its delivery
      // id, which is how a receiver tells the repeat (docs/gateway.md). Each change once by that id, in order.
      const unique = () => [
        ...new Map(receiver.delivered('/ok/crash').map((one) => [one.headers['patchloop-delivery'], one])).values(),
      ];
      await eventually(() => (unique().length === 4 ? true : undefined), 120_000, 'four pushes');
      const pushes = unique();
      expect(pushes.map(pushLine)).toEqual([
        'status TASK_STATE_WORKING',
        'status TASK_STATE_INPUT_REQUIRED | waiting for a decision on add {"a":2,"b":3}: answer "approve" or "reject: REASON"',
        'status TASK_STATE_WORKING | add approved',
        'task TASK_STATE_COMPLETED | answer=The sum is 5.',
      ]);
      for (const one of pushes) expect(verified(one, 'tok-c')).toBe(true);
    } finally {
      await own.close();
      for (const worker of workers) await worker.kill('SIGKILL');
      await client.close();
      await fake.close();
    }
  });
}, 300_000);
