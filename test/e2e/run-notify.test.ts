import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, onTestFinished } from 'vitest';
import { signatureHeader } from '../../src/activities/receiver-post';
import type { NotificationState, RunHandle } from '../../src/client/patchloop-client';
import { reply } from '../../src/fake-model/steps';
import type { NotificationBody } from '../../src/runtime';
import { venvPython } from '../../support/repository';
import { runCli } from '../support/cli';
import { it } from '../support/fixtures';
import type { TestWorld } from '../support/temporal';
import { eventually, recordHistory } from '../support/wait';

/** The variable the notifications' key is in: set in this process, where the tests' workers run. */
const KEY_VARIABLE = 'PATCHLOOP_TEST_NOTIFY_KEY';
const KEY = `whsec_${randomUUID()}`;
process.env[KEY_VARIABLE] = KEY;
// Where the console is reached: the body links to the run's page there.
process.env['PATCHLOOP_CONSOLE_URL'] = 'https://console.example/';

const usage = { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 };

interface Received {
  delivery: string;
  verified: boolean;
  content_type: string;
  body: NotificationBody;
  status: number;
}

/**
 * test/support/notify_receiver.py, run with the test venv's Python: answers with `answers` in order
 * (the last repeats), checks every signature with the `verify` docs/notifications.md shows, records
 * each request; with `hold`, its first 2xx answer waits until `release()`.
 */
async function pythonReceiver(answers: string, hold = false) {
  const child = spawn(
    venvPython,
    [join(__dirname, '..', 'support', 'notify_receiver.py'), answers, ...(hold ? ['--hold'] : [])],
    {
      env: { ...process.env, NOTIFY_SECRET: KEY },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  onTestFinished(() => void child.kill());
  const url = ((await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next()).value as string).trim();
  const post = (path: string, headers: Record<string, string> = {}, body = '') =>
    fetch(`${url}${path}`, { method: 'POST', headers, body });
  return {
    url,
    received: async () => (await (await fetch(url)).json()) as Received[],
    release: () => post('/release'),
    verifies: async (signature: string, body: string) =>
      ((await (await post('/verify', { 'patchloop-signature': signature }, body)).json()) as { verified: boolean })
        .verified,
  };
}

/** A receiver in this process: answers by path (`/gone` 410, `/busy` 503, else 200) and records each request. */
async function nodeReceiver() {
  const received: Array<{ path: string; headers: IncomingHttpHeaders; body: NotificationBody }> = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers, body: JSON.parse(text) as NotificationBody });
      const status = request.url === '/gone' ? 410 : request.url === '/busy' ? 503 : 200;
      response.writeHead(status).end(status === 410 ? 'gone' : status === 503 ? 'busy' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function cliEnvironment(world: TestWorld) {
  return { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
}

/** Waits until the run's notification is in this state, and answers it. */
function notificationIn<State extends NotificationState['state']>(
  run: RunHandle,
  state: State,
  check: (found: Extract<NotificationState, { state: State }>) => boolean = () => true,
) {
  return eventually(
    async () => {
      const found = await run.notification();
      return found?.state === state && check(found as Extract<NotificationState, { state: State }>)
        ? (found as Extract<NotificationState, { state: State }>)
        : undefined;
    },
    undefined,
    `notification ${state}`,
  );
}

/** Ends a notifier that would otherwise keep trying for a day. */
async function stopNotifier(world: TestWorld, run: RunHandle): Promise<void> {
  const state = await run.notification();
  if (state) await world.client.temporal.workflow.getHandle(state.notifier_id).terminate('the test is over');
}

/** What a run whose receiver never accepts shows: its own result, and the delivery's attempts and last error. */
async function neverAccepted(world: TestWorld, run: RunHandle, received: unknown[]): Promise<void> {
  const result = await run.result();
  expect([result.status, result.answer, result.usage]).toEqual(['completed', 'All green.', usage]);
  const env = cliEnvironment(world);
  const shown = await eventually(async () => {
    const text = (await runCli(['show', run.workflowId], env)).stdout;
    const attempt = /\nnotify: retrying, attempt (\d+); last error: (.*)\n/.exec(text);
    return attempt && Number(attempt[1]) >= 3 ? attempt : undefined;
  });
  expect(shown[2]).toBe('NotifyUnreachable: the receiver answered HTTP 503: busy');
  const json = JSON.parse((await runCli(['show', run.workflowId, '--json'], env)).stdout) as {
    notification: NotificationState;
  };
  expect(json.notification).toMatchObject({
    state: 'retrying',
    last_error: { type: 'NotifyUnreachable', message: 'the receiver answered HTTP 503: busy' },
  });
  expect(received.length).toBeGreaterThanOrEqual(2);
  expect(await run.result()).toEqual(result);
}

describe('a call when a run ends (notify)', () => {
  it('a receiver that fails twice, then accepts: one delivery, after the run returned its result, signed and checked in Python', async ({
    startWorld,
  }) => {
    const receiver = await pythonReceiver('500,500,200', true);
    const world = await startWorld({ fake: { script: [reply(['It is ', 'sunny.'], { usage })] } });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'What is the weather?',
      notify: { url: `${receiver.url}/hook`, secret_env: KEY_VARIABLE, retry_initial_seconds: 0.2 },
    });
    const result = await run.result();
    expect([result.status, result.answer, result.usage]).toEqual(['completed', 'It is sunny.', usage]);
    // The run has returned; the receiver's third answer (its 200) waits until the test lets it go.
    const held = await eventually(async () => {
      const received = await receiver.received();
      return received.length === 3 ? received : undefined;
    });
    expect(held.map((entry) => entry.status)).toEqual([500, 500, 200]);
    // Meanwhile the run's notification is being tried again, and says why (the client asks: the held
    // answer must not outlast the attempt's 10 s).
    expect(await run.notification()).toMatchObject({
      state: 'retrying',
      attempt: 3,
      last_error: { type: 'NotifyUnreachable', message: 'the receiver answered HTTP 500: not now' },
    });
    await receiver.release();
    const delivered = await notificationIn(run, 'delivered');
    expect(delivered).toMatchObject({ attempts: 3, http_status: 200 });
    // One delivery: every attempt sent the same id, body and a valid signature; one was accepted.
    const received = await receiver.received();
    expect(received).toHaveLength(3);
    expect(new Set(received.map((entry) => entry.delivery))).toEqual(new Set([received[0]!.body.delivery_id]));
    expect(received.map((entry) => entry.verified)).toEqual([true, true, true]);
    expect(received.filter((entry) => entry.status === 200)).toHaveLength(1);
    expect(received[1]!.body).toEqual(received[0]!.body);
    const description = await run.workflow.describe();
    expect(received[0]!.body).toEqual({
      delivery_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      workflow_id: run.workflowId,
      run_id: description.runId,
      agent: 'assistant',
      status: 'completed',
      answer: 'It is sunny.',
      usage,
      ended_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      links: {
        console: `https://console.example/runs/${encodeURIComponent(run.workflowId)}`,
        temporal_ui: expect.stringContaining(`/workflows/${encodeURIComponent(run.workflowId)}`),
      },
    });
    const endedAt = Date.parse(received[0]!.body.ended_at);
    expect(endedAt).toBeGreaterThanOrEqual(description.startTime.getTime());
    expect(endedAt).toBeLessThanOrEqual(description.closeTime!.getTime());
    const env = cliEnvironment(world);
    const shown = await runCli(['show', run.workflowId], env);
    expect(shown.stdout).toContain(`\nnotify: delivered at ${delivered.delivered_at} after 3 attempt(s) (HTTP 200)\n`);
    const json = JSON.parse((await runCli(['show', run.workflowId, '--json'], env)).stdout) as {
      notification: unknown;
    };
    expect(json.notification).toEqual(delivered);
    // The result the run returned is the one it returns now.
    expect(await run.result()).toEqual(result);
    await recordHistory(run, 'run-end-notify');
  });

  it('patchloop run --notify-url --notify-secret-env: the receiver gets the body once, its signature checked in Python', async ({
    startWorld,
  }) => {
    const receiver = await pythonReceiver('200');
    const world = await startWorld({ fake: { script: [reply('Deployed.', { usage })] } });
    const env = cliEnvironment(world);
    const id = `notify-cli-${randomUUID()}`;
    const started = await runCli(
      [
        'run',
        'assistant',
        'Deploy',
        'it',
        '--id',
        id,
        '--notify-url',
        `${receiver.url}/hooks/runs`,
        '--notify-secret-env',
        KEY_VARIABLE,
      ],
      env,
    );
    expect([started.code, JSON.parse(started.stdout)]).toEqual([
      0,
      { workflow_id: id, task_queue: world.config.taskQueue },
    ]);
    const run = world.client.run(id);
    expect((await run.result()).answer).toBe('Deployed.');
    const delivered = await notificationIn(run, 'delivered');
    expect(delivered).toMatchObject({
      attempts: 1,
      http_status: 200,
      notifier_id: expect.stringMatching(`^${id}/notify/`),
    });
    const [entry] = await receiver.received();
    expect(entry).toMatchObject({ verified: true, content_type: 'application/json', status: 200 });
    expect(entry!.body).toMatchObject({
      workflow_id: id,
      agent: 'assistant',
      status: 'completed',
      answer: 'Deployed.',
      usage,
    });
    expect(entry!.delivery).toBe(entry!.body.delivery_id);
    // The Python check refuses a wrong key, a changed body and an old timestamp.
    const body = JSON.stringify(entry!.body);
    const now = Math.floor(Date.now() / 1000);
    expect(await receiver.verifies(signatureHeader(KEY, now, body), body)).toBe(true);
    expect(await receiver.verifies(signatureHeader('another key', now, body), body)).toBe(false);
    expect(await receiver.verifies(signatureHeader(KEY, now, body), `${body} `)).toBe(false);
    expect(await receiver.verifies(signatureHeader(KEY, now - 3600, body), body)).toBe(false);
    // Both options or neither, and each checked before a run starts.
    const half = await runCli(['run', 'assistant', 'hi', '--notify-url', receiver.url], env);
    expect([half.code, half.stderr]).toEqual([
      2,
      expect.stringContaining('--notify-url and --notify-secret-env go together'),
    ]);
    const bad = await runCli(['run', 'assistant', 'hi', '--notify-url', 'ftp://x', '--notify-secret-env', 'K'], env);
    expect([bad.code, bad.stderr]).toEqual([
      2,
      expect.stringContaining('--notify-url must be an http:// or https:// URL'),
    ]);
  });

  it("a schedule's notify: the run each fire starts calls the receiver when it ends", async ({ startWorld }) => {
    const receiver = await nodeReceiver();
    const world = await startWorld({ fake: { script: [reply('Nightly report done.', { usage })] } });
    const env = cliEnvironment(world);
    const name = `nightly-${randomUUID().slice(0, 8)}`;
    const created = await runCli(
      [
        'schedule',
        'create',
        name,
        '--agent',
        'assistant',
        '--input',
        'Write the nightly report',
        '--every',
        '1d',
        '--notify-url',
        `${receiver.url}/hooks/nightly`,
        '--notify-secret-env',
        KEY_VARIABLE,
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    onTestFinished(async () => void (await runCli(['schedule', 'delete', name], env)));
    const triggered = await runCli(['schedule', 'trigger', name], env);
    expect(triggered.code, triggered.stderr).toBe(0);
    const [delivery] = await eventually(() => (receiver.received.length > 0 ? receiver.received : undefined));
    expect(delivery!.path).toBe('/hooks/nightly');
    expect(delivery!.body).toMatchObject({
      agent: 'assistant',
      status: 'completed',
      answer: 'Nightly report done.',
      usage,
    });
    const signature = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery!.headers['patchloop-signature']));
    expect(signature?.[0]).toBe(signatureHeader(KEY, Number(signature![1]), JSON.stringify(delivery!.body)));
  });

  it("a receiver that never accepts: show reports the attempts and the last error, the run's result is its own", async ({
    startWorld,
  }) => {
    const receiver = await nodeReceiver();
    const world = await startWorld({ fake: { script: [reply('All green.', { usage })] } });
    const run = await world.client.start({
      agent: 'assistant',
      input: 'Is the build green?',
      notify: { url: `${receiver.url}/busy`, secret_env: KEY_VARIABLE, retry_initial_seconds: 0.1 },
    });
    try {
      await neverAccepted(world, run, receiver.received);
    } finally {
      await stopNotifier(world, run);
    }
  });

  it("an agent's notify, a run's own winning over it, a failed run, and the failures no retry mends", async ({
    startWorld,
  }) => {
    const receiver = await nodeReceiver();
    const notify = (path: string, secret = KEY_VARIABLE) => ({
      url: `${receiver.url}${path}`,
      secret_env: secret,
      retry_initial_seconds: 0.1,
    });
    const world = await startWorld({
      fake: { responder: () => reply('Done.') },
      agents: [{ name: 'notified', instructions: 'You report.', notify: notify('/agent') }],
    });
    const ended = async <State extends 'delivered' | 'gave_up'>(run: RunHandle, state: State) => {
      await run.result().catch(() => undefined);
      return notificationIn(run, state);
    };
    await ended(await world.client.start({ agent: 'notified', input: 'a' }), 'delivered');
    await ended(await world.client.start({ agent: 'notified', input: 'b', notify: notify('/run') }), 'delivered');
    // A run that fails (here: an agent no worker serves) notifies too, with its failure.
    await ended(await world.client.start({ agent: 'nobody', input: 'c', notify: notify('/failed') }), 'delivered');
    expect(receiver.received.map((entry) => [entry.path, entry.body.agent, entry.body.status])).toEqual([
      ['/agent', 'notified', 'completed'],
      ['/run', 'notified', 'completed'],
      ['/failed', 'nobody', 'failed'],
    ]);
    expect(receiver.received[2]!.body).toMatchObject({ answer: null, error: { type: 'UnknownAgent' } });
    // A receiver that refuses the call (410), or a key the worker does not have, ends the delivery at once.
    const gone = await ended(
      await world.client.start({ agent: 'notified', input: 'd', notify: notify('/gone') }),
      'gave_up',
    );
    expect(gone).toMatchObject({
      attempts: 1,
      last_error: { type: 'NotifyRejected', message: 'the receiver answered HTTP 410: gone' },
    });
    const keyless = await world.client.start({
      agent: 'notified',
      input: 'e',
      notify: notify('/never', 'PATCHLOOP_TEST_NO_SUCH_KEY'),
    });
    const missing = await ended(keyless, 'gave_up');
    expect(missing.last_error).toEqual({
      type: 'NotifySecretMissing',
      message:
        "notify.secret_env names PATCHLOOP_TEST_NO_SUCH_KEY, which is not set in the worker's environment: the notification cannot be signed",
    });
    const shown = await runCli(['show', keyless.workflowId], cliEnvironment(world));
    expect(shown.stdout).toContain(
      "\nnotify: gave up after 1 attempt(s): NotifySecretMissing: notify.secret_env names PATCHLOOP_TEST_NO_SUCH_KEY, which is not set in the worker's environment: the notification cannot be signed\n",
    );
    expect(receiver.received.map((entry) => entry.path)).toEqual(['/agent', '/run', '/failed', '/gone']);
  });
});
