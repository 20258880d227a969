import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { occurrencesInDatabase } from '../support/database';
import { RunFailedError } from '../../src/client/patchloop-client';
import { FakeModelServer } from '../../src/fake-model/server';
import { failWith, reply } from '../../src/fake-model/steps';
import { clientOn, temporalAddress } from '../support/temporal';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';

const workers: WorkerProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
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
    const taskQueue = `secrets-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    cleanups.push(
      () => client.close(),
      () => fake.close(),
    );
    const worker = await spawnWorker({
      address: temporalAddress(),
      taskQueue,
      modelUrl: fake.url,
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [] }],
      env: { OPENAI_API_KEY: key },
    });
    workers.push(worker);

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

    const histories = JSON.stringify([await retried.workflow.fetchHistory(), await failed.workflow.fetchHistory()]);
    expect(histories).toContain(`${canary}-401`);
    expect(histories).not.toContain(key);
    await worker.kill('SIGTERM');
    // Positive control: the failure texts are in the database, the key is not.
    expect(occurrencesInDatabase(`${canary}-401`)).toBeGreaterThan(0);
    expect(occurrencesInDatabase(key)).toBe(0);
    const output = worker.output();
    expect(output).toContain('Activity failed');
    expect(output).not.toContain(key);
    fake.assertDone();
  });
});
