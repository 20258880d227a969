import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type Task, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { z } from 'zod';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { FakeModelServer } from '../../src/fake-model/server';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import { createKey } from '../../src/gateway/keys';
import type { AgentDefinitionInput, A2aPushWatcherResult } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { a2aClient, sendRequest, taskLine, userMessage } from '../support/a2a';
import { test } from '../support/fixtures';
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

/** What a receiver does with a push: checks its signature with the token, then reads the StreamResponse. */
function verified(one: Received, token: string): boolean {
  const header = String(one.headers['patchloop-signature'] ?? '');
  const parts = Object.fromEntries(header.split(',').map((part) => part.split('=') as [string, string]));
  const expected = createHmac('sha256', token).update(`${parts.t}.${one.body}`).digest('hex');
  return parts.v1 === expected && Math.abs(Date.now() / 1000 - Number(parts.t)) < 300;
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

/** A process to its end: its exit status and output. */
function runProcess(program: string, args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(program, args, { cwd: repositoryRoot, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
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
const it = test.override('worldOptions', { agents, tools });

const folder = mkdtempSync(join(tmpdir(), 'a2a-push-'));
const keysFile = join(folder, 'keys.json');
const tag = randomUUID().slice(0, 8);
const alice = createKey(keysFile, `alice-${tag}`).key;
const bob = createKey(keysFile, `bob-${tag}`).key;
afterAll(() => rmSync(folder, { recursive: true, force: true }));

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
  let gateway: { url: string; close(): Promise<void> };
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    return async () => {
      await gateway?.close();
      await receiver.close();
    };
  });
  const open = (world: { client: Parameters<typeof createPatchloopGateway>[0]['client'] }) =>
    listen(
      createPatchloopGateway({ client: world.client, keysFile, agents, log: () => undefined }).app,
      '127.0.0.1',
      0,
    );

  it('a config sent with the message (JS SDK, JSON-RPC): every change once, in order, signed; Get, List; another principal finds nothing', async ({
    world,
  }) => {
    gateway = await open(world);
    const card = await (await fetch(`${gateway.url}/a2a/payer/.well-known/agent-card.json`)).json();
    expect(card).toMatchObject({ capabilities: { streaming: true, pushNotifications: true } });

    world.fake.enqueue(callTools([toolCall('t1', 'transfer', { to: 'bob', amount: 5 })]), reply('Paid bob.'));
    const client = await a2aClient(gateway.url, 'payer', 'JSONRPC', alice);
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
      const other = await a2aClient(gateway.url, 'payer', binding, bob);
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
  });
}, 300_000);
