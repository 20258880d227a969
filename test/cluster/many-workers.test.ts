import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { validateToolLinkage } from '../../src/context';
import { FakeModelServer, type ChatRequestBody } from '../../src/fake-model/server';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { repositoryRoot } from '../../support/repository';
import { finishedRepeats, startSideEffectServer, type WorkerDeath } from '../../support/side-effects';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';
import { clientOn, temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';

/**
 * Three `patchloop worker` processes share one task queue on temporal-server (PostgreSQL): runs spread
 * over all of them, and when one is killed (-9) with a tool call in flight, its runs finish on the other
 * two; none is lost, no finished call runs again, each run's transcript holds each of its calls once.
 */
const RUNS = 12;
const CALLS_PER_RUN = 3;
/** A finished call's checkpoint may still be in the worker (its heartbeat throttle) when it is killed. */
const CHECKPOINT_WINDOW_MS = 1000;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Run `i` is asked "run i"; its model charges `run i-0` .. `run i-2`, one per iteration, then answers. */
function responder(body: ChatRequestBody) {
  const user = body.messages.find((message) => message['role'] === 'user');
  const run = String(user?.['content']).replace('run ', '');
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done < CALLS_PER_RUN)
    return callTools([toolCall(`c${done}`, 'charge', { label: `run${run}-${done}`, seconds: 2 })], {
      firstChunkDelayMs: 50,
    });
  return reply(`run ${run}: charged ${CALLS_PER_RUN} times`);
}

it('runs spread over three worker processes; kill -9 of one mid-call: its runs finish on the others, none lost, no finished call run twice', async () => {
  const effects = await startSideEffectServer();
  const fake = await FakeModelServer.start({ responder: (body) => responder(body), keepBodies: false });
  const taskQueue = `many-workers-${randomUUID()}`;
  const client = await clientOn(taskQueue);
  const workers = new Map<string, WorkerProcess>();
  cleanups.push(
    () => effects.close(),
    () => fake.close(),
    () => client.close(),
    async () => {
      for (const worker of workers.values()) await worker.kill('SIGKILL');
    },
  );
  const agents = [
    { name: 'clerk', instructions: 'You charge.', tools: ['charge'], limits: { heartbeat_timeout_seconds: 2 } },
  ];
  for (const name of ['w1', 'w2', 'w3'])
    workers.set(
      name,
      await spawnWorker({
        address: temporalAddress(),
        taskQueue,
        modelUrl: fake.url,
        agents,
        args: ['--tools', join(repositoryRoot, 'test', 'support', 'side-effect-tools.ts')],
        env: { PATCHLOOP_TEST_EFFECTS_URL: effects.url, PATCHLOOP_TEST_WORKER_NAME: name },
      }),
    );
  const runs = await Promise.all(
    Array.from({ length: RUNS }, (_, index) =>
      client.start({ agent: 'clerk', input: `run ${index}` }, { workflowId: `many-workers-${index}-${randomUUID()}` }),
    ),
  );
  // Kill w2 while one of its calls is in flight (started, not ended: a call takes 2 s, so the kill lands
  // within it however busy the machine), once every worker has started some.
  const inFlight = await eventually(
    () => {
      const by = (worker: string) => effects.effects.filter((effect) => effect.worker === worker);
      if (['w1', 'w2', 'w3'].some((worker) => by(worker).length === 0)) return undefined;
      const ended = new Set(by('w2').flatMap((effect) => (effect.phase === 'end' ? [effect.key] : [])));
      return by('w2').find((effect) => effect.phase === 'start' && !ended.has(effect.key));
    },
    60_000,
    'a call in flight on w2 after every worker has charged',
  );
  const death: WorkerDeath = { worker: 'w2', at: Date.now() };
  await workers.get('w2')!.kill('SIGKILL');
  death.exited = Date.now();
  workers.delete('w2');

  const results = await Promise.all(runs.map((run) => run.result()));
  expect(results.map((result) => result.status)).toEqual(runs.map(() => 'completed'));
  for (const [index, result] of results.entries()) {
    validateToolLinkage(result.transcript);
    const toolResults = result.transcript
      .filter((message) => message.role === 'tool')
      .map((message) => message.content);
    expect(toolResults).toEqual(
      Array.from({ length: CALLS_PER_RUN }, (_, call) => JSON.stringify(`charged run${index}-${call}`)),
    );
    expect(result.transcript.at(-1)).toEqual({ role: 'assistant', content: `run ${index}: charged 3 times` });
  }
  // Outside the workers: every call finished, none finished twice but within the checkpoint window of
  // the kill; the call in flight on w2 was finished by another worker.
  const ends = effects.effects.filter((effect) => effect.phase === 'end');
  expect(new Set(ends.map((effect) => effect.label)).size).toBe(RUNS * CALLS_PER_RUN);
  expect(finishedRepeats(effects.effects, [death], CHECKPOINT_WINDOW_MS).outside).toBe(0);
  expect(ends.filter((effect) => effect.label === inFlight.label).map((effect) => effect.worker)).toEqual([
    expect.not.stringMatching(/^w2$/),
  ]);
  // Work after the kill went to the two workers left.
  expect(new Set(effects.effects.filter((effect) => effect.at > death.exited!).map((effect) => effect.worker))).toEqual(
    new Set(['w1', 'w3']),
  );
});
