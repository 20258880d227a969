import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { PatchloopClient, type RunHandle } from '../../src/client/patchloop-client';
import { configFromEnvironment } from '../../src/config/environment';
import { validateToolLinkage, type Message } from '../../src/context';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import type { AgentDefinitionInput, RunStatus } from '../../src/runtime';
import { freePort } from '../../src/worker/free-port';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';
import { eventually } from '../support/wait';
import { workerProcesses } from '../support/worker-processes';

const WAITER: AgentDefinitionInput = {
  name: 'waiter',
  instructions: 'You wait for things.',
  waits: { max_seconds: 3600 },
};

/**
 * The sleep of the crash test: long enough that a kill -9 of the worker, a restart of the dev server and
 * the start of a new worker fit before it wakes on a loaded machine (about 10 s on a quiet one: a server
 * restart 2-5 s, a worker start 2-5 s).
 */
const SLEEP_SECONDS = 45;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Waits until the run reports a durable wait in progress, and answers its status then. */
function waiting(run: RunHandle): Promise<RunStatus> {
  return eventually(async () => {
    const status = await run.status();
    return status.state === 'waiting' && status.waiting?.length ? status : undefined;
  });
}

/** When Temporal fired the run's timers (server time, ms). */
async function timersFired(run: RunHandle): Promise<number[]> {
  const history = await run.workflow.fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_FIRED)
    .map((event) => Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6));
}

/** The tool results of a call in a transcript. */
function resultsOf(messages: readonly Message[], callId: string): Array<Record<string, unknown>> {
  return messages
    .filter((message) => message.role === 'tool' && message['tool_call_id'] === callId)
    .map((message) => JSON.parse(message['content'] as string) as Record<string, unknown>);
}

/**
 * A dev server of the test's own on a SQLite file (so a restart keeps its state), a fake model, and
 * `patchloop worker` processes against them (killed with SIGKILL at the end).
 */
async function ownServer(fake: FakeModelServer) {
  const serverOptions = {
    port: await freePort(),
    dbFile: join(mkdtempSync(join(tmpdir(), 'patchloop-waits-crash-')), 'temporal.db'),
  };
  let server: DevServer = await startDevServer(serverOptions);
  const taskQueue = `waits-crash-${randomUUID()}`;
  const client = PatchloopClient.on(await Connection.connect({ address: server.address }), {
    ...configFromEnvironment({}),
    taskQueue,
  });
  const workers: WorkerProcess[] = [];
  cleanups.push(
    () => server.stop(),
    () => fake.close(),
    () => client.close(),
    async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
    },
  );
  return {
    client,
    startWorker: async () => {
      const worker = await spawnWorker({ address: server.address, taskQueue, modelUrl: fake.url, agents: [WAITER] });
      workers.push(worker);
      return worker;
    },
    restartServer: async () => {
      await server.stop();
      server = await startDevServer(serverOptions);
    },
  };
}

describe('sleep across crashes', () => {
  it('survives kill -9 of its worker and a restart of the dev server, and wakes within 2 s of its time', async () => {
    const fake = await FakeModelServer.start({
      script: [
        callTools([toolCall('call_s', 'sleep', { seconds: SLEEP_SECONDS, reason: 'through a crash' })]),
        reply('Awake after the crash.'),
      ],
    });
    const { client, startWorker, restartServer } = await ownServer(fake);
    const first = await startWorker();
    const run = await client.start({ agent: 'waiter', input: 'Sleep through a crash.' });
    const status = await waiting(run);
    const wakeAt = Date.parse(status.wake_at!);

    await first.kill('SIGKILL');
    await restartServer();
    await startWorker();
    // The wait must still be in progress now, or the test did not test a wait across both faults.
    const left = wakeAt - Date.now();
    if (left <= 0)
      throw new Error(
        `setup took longer than the sleep: the worker was killed, the server restarted and a new worker started ${(-left / 1000).toFixed(1)} s after the run's wake time (sleep of ${SLEEP_SECONDS} s); raise SLEEP_SECONDS`,
      );
    expect(await eventually(() => run.status())).toMatchObject({ state: 'waiting', wake_at: status.wake_at });

    const result = await eventually(() => run.result());
    expect(result).toMatchObject({ status: 'completed', answer: 'Awake after the crash.' });
    const messages = result.transcript.slice(1);
    validateToolLinkage(result.transcript);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const results = resultsOf(messages, 'call_s');
    expect(results).toEqual([
      {
        woke: 'time',
        wake_at: status.wake_at,
        waited_seconds: expect.any(Number) as number,
        now: expect.any(String) as string,
      },
    ]);
    // One model request after the wait: the one that read its result.
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body.messages.at(-1)).toEqual(messages[2]);
    // Temporal fired the timer (server time) within 2 s of the time the status reported.
    const fired = await timersFired(run);
    expect(fired).toHaveLength(1);
    expect(Math.abs(fired[0]! - wakeAt)).toBeLessThan(2000);
    fake.assertDone();
  });

  it('a user message wakes it early after its worker was killed and replaced', async () => {
    const fake = await FakeModelServer.start({
      script: [callTools([toolCall('call_s', 'sleep', { seconds: 3600, reason: 'an hour' })]), reply('You woke me.')],
    });
    const { client, start } = await workerProcesses(fake, [WAITER], 'waits-crash', cleanups);
    const first = await start();
    const run = await client.start({ agent: 'waiter', input: 'Sleep an hour.' });
    await waiting(run);
    await first.kill('SIGKILL');
    await start();
    await run.submit('Wake up, please.');

    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'You woke me.' });
    const messages = result.transcript.slice(1);
    validateToolLinkage(result.transcript);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
    expect(resultsOf(messages, 'call_s')).toEqual([expect.objectContaining({ woke: 'user_message' })]);
    expect(messages[3]).toEqual({ role: 'user', content: 'Wake up, please.' });
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body.messages.slice(1)).toEqual(messages.slice(0, 4));
    fake.assertDone();
  });
});
