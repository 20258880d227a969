import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect } from 'vitest';
import { testWithWorld } from '../support/fixtures';
import { assistantAgent, carefulAssistantAgent } from '../../src/agents/assistant';
import { demoModel } from '../../src/fake-model/demo-model';
import { freePort } from '../../src/worker/free-port';
import { startDevServer, type DevServer } from '../../src/worker/temporal-cli';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { listedWorkflows, type TestWorld } from '../support/temporal';
import { runCli } from '../support/cli';
import { cliEntry } from '../../support/compiled';
import { repositoryRoot } from '../../support/repository';
import { onTerminal } from '../support/terminal';
import { eventually, recordHistory } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

/**
 * The CLI says what is happening (issue 35, parts 4 and 5): waits without a worker, Ctrl-C, commands on
 * ended runs, closed pipes, failed runs in the list, the worker's terminal, and what the Temporal UI
 * shows. One in-process worker on the demo model serves the file; cases that need a worker process (or
 * a server of their own) start it.
 */
const it = testWithWorld({
  fake: { responder: demoModel },
  agents: [assistantAgent, carefulAssistantAgent],
});
const processes: ChildProcess[] = [];
const workers: WorkerProcess[] = [];
afterAll(async () => {
  for (const child of processes) child.kill('SIGKILL');
  for (const worker of workers) await worker.kill('SIGKILL');
});

/** The CLI's environment: the file's server and, unless told otherwise, the in-process worker's queue. */
function env(world: TestWorld, extra: Record<string, string> = {}): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: world.config.temporalAddress,
    PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
    ...extra,
  };
}

function cli(world: TestWorld, args: string[], stdin = '', extra: Record<string, string> = {}) {
  return runCli(args, env(world, extra), stdin);
}

/** The CLI as a process whose output is read as it comes (`runCli` waits for the end). */
function startCli(world: TestWorld, args: string[], extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, [cliEntry(), ...args], {
    cwd: repositoryRoot,
    env: { ...process.env, ...env(world, extra) },
  });
  processes.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** A worker process serving the demo agents on a task queue. */
async function workerOn(world: TestWorld, taskQueue: string): Promise<WorkerProcess> {
  const worker = await spawnWorker({
    address: world.config.temporalAddress,
    taskQueue,
    modelUrl: world.fake.url,
    agents: [assistantAgent, carefulAssistantAgent],
  });
  workers.push(worker);
  return worker;
}

/**
 * A task queue whose only worker was killed (SIGKILL) right after it polled: the server goes on listing
 * it as a poller for about two minutes, which is what a newcomer meets after stopping their worker.
 */
async function queueOfDeadWorker(world: TestWorld): Promise<string> {
  const taskQueue = `manners-dead-${randomUUID()}`;
  const worker = await workerOn(world, taskQueue);
  const pollers = async () =>
    (
      await world.client.temporal.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
    ).pollers ?? [];
  await eventually(async () => ((await pollers()).length > 0 ? true : undefined), 30_000, 'the worker to poll');
  await worker.kill('SIGKILL');
  // The server still lists the dead worker: the poller list alone would say a worker is there.
  expect((await pollers()).length).toBeGreaterThan(0);
  return taskQueue;
}

const waitingFor = (queue: string, task: string) =>
  new RegExp(
    `waiting for a worker on task queue '${queue}' \\(no worker has taken the run's ${task} for \\d+ s; start one with \`npx patchloop worker\`\\)`,
  );

describe('a run no worker takes', () => {
  it('plain run says it started and waits (exit 3); follow says what it waits for until a worker takes it', async ({
    world,
  }) => {
    const queue = await queueOfDeadWorker(world);
    const id = `manners-lonely-${randomUUID()}`;
    const started = await cli(world, ['run', 'assistant', 'add 2 and 3', '--id', id], '', {
      PATCHLOOP_TASK_QUEUE: queue,
    });
    expect(started.code, started.stderr).toBe(3);
    expect(JSON.parse(started.stdout)).toEqual({ workflow_id: id, task_queue: queue, waiting_for_worker: true });
    expect(started.stderr).toMatch(
      new RegExp(
        `^started ${id}, but it is ${waitingFor(queue, 'first task').source}\n` +
          `it runs once a worker takes it; follow it with: npx patchloop follow ${id}\n$`,
      ),
    );
    // Ctrl-C while following: the run goes on, and the commands to reach it are on the screen.
    const terminal = onTerminal(['follow', id], { ...process.env, ...env(world, { PATCHLOOP_TASK_QUEUE: queue }) });
    processes.push(terminal.child);
    await eventually(() => (waitingFor(queue, 'first task').test(terminal.screen()) ? true : undefined));
    terminal.child.stdin.write('\x03');
    expect(await terminal.exited).toBe(130);
    expect(terminal.screen()).toContain(
      `detached: ${id} goes on without this command\r\n` +
        `  follow it again: npx patchloop follow ${id}\r\n` +
        `  abort it:        npx patchloop abort ${id}\r\n`,
    );
    // A follower that is there when a worker comes says so, and the run goes on to its answer; so does
    // a chat whose session no worker has taken yet.
    const follower = startCli(world, ['follow', id], { PATCHLOOP_TASK_QUEUE: queue });
    const chat = startCli(world, ['chat', 'assistant', '--id', `${id}-chat`], { PATCHLOOP_TASK_QUEUE: queue });
    chat.child.stdin.end('hello\n');
    await eventually(() => (waitingFor(queue, 'first task').test(follower.stderr()) ? true : undefined));
    await eventually(() => (waitingFor(queue, 'first task').test(chat.stderr()) ? true : undefined));
    expect(chat.stderr()).toMatch(
      new RegExp(`${waitingFor(queue, 'first task').source}: messages wait until one does\n`),
    );
    await workerOn(world, queue);
    expect(await follower.exited, follower.stderr()).toBe(0);
    expect(follower.stderr()).toContain("a worker has taken the run's first task: the run goes on\n");
    expect(follower.stdout()).toContain('answer: Done: add returned 5.');
    expect(await chat.exited, chat.stderr()).toBe(0);
    expect(chat.stdout()).toContain('assistant> You said: hello');
  });
});

describe('commands that wait for a worker', () => {
  it('approvals, approve, send and show say within seconds that no worker serves the run; once one starts, each ends as it does with a worker', async ({
    world,
  }) => {
    const queue = `manners-unserved-${randomUUID()}`;
    const first = await workerOn(world, queue);
    const client = PatchloopClient.on(await Connection.connect({ address: world.config.temporalAddress }), {
      ...world.config,
      taskQueue: queue,
    });
    const onQueue = { PATCHLOOP_TASK_QUEUE: queue };
    const waitingRun = async (text: string) => {
      const run = await client.start({ agent: 'careful-assistant', input: `repeat '${text}' 2 times` });
      const pending = await eventually(async () => {
        const status = await run.status();
        return status.state === 'awaiting_approval' ? status.pending_approvals : undefined;
      });
      return { run, call: pending[0]!.tool_call_id, pending };
    };
    try {
      // What approve prints with a worker there.
      const served = await waitingRun('served');
      const withWorker = await cli(world, ['approve', served.run.workflowId, served.call], '', onQueue);
      expect([withWorker.code, withWorker.stderr]).toEqual([0, '']);
      const decided = await waitingRun('decided');
      const listed = await waitingRun('listed');
      const session = await client.startSession({ agent: 'assistant' });
      expect((await session.send('hello')).reply).toBe('You said: hello');
      await first.kill('SIGKILL');

      const since = Date.now();
      const approve = startCli(world, ['approve', decided.run.workflowId, decided.call], onQueue);
      const approvals = startCli(world, ['approvals', listed.run.workflowId], onQueue);
      const send = startCli(world, ['send', session.workflowId, 'hello again'], onQueue);
      const taken = waitingFor(queue, 'next task');
      const unanswered = new RegExp(
        `waiting for a worker on task queue '${queue}' \\(no worker has answered a query of the run for \\d+ s; start one with \`npx patchloop worker\`\\)`,
      );
      await eventually(() => (taken.test(approve.stderr()) ? true : undefined), 60_000, 'approve to say it waits');
      await eventually(
        () => (unanswered.test(approvals.stderr()) ? true : undefined),
        60_000,
        'approvals to say it waits',
      );
      await eventually(() => (taken.test(send.stderr()) ? true : undefined), 60_000, 'send to say it waits');
      // Said within seconds (5 s on a quiet machine; the bound is loose for a loaded one), not minutes.
      expect(Date.now() - since).toBeLessThan(30_000);
      expect(approve.stdout() + approvals.stdout() + send.stdout()).toBe('');
      // Show does not wait: what needs no worker at once, and why the rest is missing.
      const shown = await cli(world, ['show', listed.run.workflowId], '', onQueue);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`^agentRun ${listed.run.workflowId}: awaiting_approval\n`));
      expect(shown.stderr).toMatch(
        new RegExp(
          `^no worker serves the run on task queue '${queue}' \\(none has answered a query of the run for \\d+ s\\): shown without its status and transcript; start one with \`npx patchloop worker\`\n$`,
        ),
      );

      await workerOn(world, queue);
      expect(await approve.exited, approve.stderr()).toBe(0);
      expect(approve.stderr()).toMatch(
        new RegExp(`${taken.source}\n(.*\n)*a worker has taken the run's next task: the run goes on\n$`),
      );
      const shape = (stdout: string, id: string, call: string) =>
        stdout.replaceAll(id, '<id>').replaceAll(`"${call}"`, '"<call>"');
      expect(shape(approve.stdout(), decided.run.workflowId, decided.call)).toBe(
        shape(withWorker.stdout, served.run.workflowId, served.call),
      );
      expect((await decided.run.result()).status).toBe('completed');
      expect(await approvals.exited, approvals.stderr()).toBe(0);
      expect(JSON.parse(approvals.stdout())).toEqual({
        workflow_id: listed.run.workflowId,
        pending_approvals: listed.pending,
      });
      expect(approvals.stderr()).toMatch(/a worker has answered: the run is served again\n$/);
      expect(await send.exited, send.stderr()).toBe(0);
      expect(JSON.parse(send.stdout())).toEqual({
        workflow_id: session.workflowId,
        status: 'completed',
        reply: 'You said: hello again',
        turn: 2,
      });
      await listed.run.abort('enough');
      await session.close();
    } finally {
      await client.close();
    }
  });
});

describe('Ctrl-C at an approval question', () => {
  it('leaves the call undecided and the run going, with the commands to follow or abort it', async ({ world }) => {
    const id = `manners-ask-${randomUUID()}`;
    const terminal = onTerminal(['run', 'careful-assistant', "repeat 'hi' 2 times", '--id', id, '--follow'], {
      ...process.env,
      ...env(world),
    });
    processes.push(terminal.child);
    await terminal.interrupt('approve repeat {"text":"hi","times":2}? [y/n]');
    expect(await terminal.exited).toBe(130);
    expect(terminal.screen()).toContain(
      '(not decided: the call still waits; decide later with patchloop approve or reject)\r\n' +
        `detached: ${id} goes on without this command\r\n`,
    );
    expect((await world.client.run(id).status()).state).toBe('awaiting_approval');
    await world.client.run(id).abort('enough');
    expect((await world.client.run(id).result()).status).toBe('aborted');
  });
});

describe('commands on runs that have ended', () => {
  it('abort says how and when the run ended (exit 4); an unknown id is still not found (exit 1)', async ({ world }) => {
    // Plain run says what it did: started, not finished, and how to follow.
    const started = await cli(world, ['run', 'assistant', 'add 2 and 3']);
    const { workflow_id: doneId } = JSON.parse(started.stdout) as { workflow_id: string };
    expect([started.code, started.stderr]).toEqual([
      0,
      `started ${doneId}: it goes on without this command; follow it with: npx patchloop follow ${doneId}\n`,
    ]);
    const done = world.client.run(doneId);
    await done.result();
    const aborted = await world.client.start({ agent: 'careful-assistant', input: "repeat 'x' 2 times" });
    await eventually(async () => ((await aborted.status()).state === 'awaiting_approval' ? true : undefined));
    await aborted.abort('changed my mind');
    await aborted.result();
    const failed = `manners-failed-${randomUUID()}`;
    await cli(world, ['run', 'nobody-serves-this', 'hi', '--id', failed]);
    const terminated = await world.client.start({ agent: 'assistant', input: 'hi' }, {});
    await terminated.workflow.terminate('test');
    const closeTime = async (id: string) => (await world.client.run(id).workflow.describe()).closeTime!.toISOString();
    const cases: Array<[string, string]> = [
      [done.workflowId, `completed at ${await closeTime(done.workflowId)}`],
      [aborted.workflowId, `aborted (changed my mind) at ${await closeTime(aborted.workflowId)}`],
      [
        failed,
        `failed (UnknownAgent: unknown agent 'nobody-serves-this'; this worker serves: assistant, careful-assistant) at ${await closeTime(failed)}`,
      ],
      [terminated.workflowId, `terminated at ${await closeTime(terminated.workflowId)}`],
    ];
    for (const [id, how] of cases) {
      const result = await cli(world, ['abort', id]);
      expect([result.code, result.stdout, result.stderr]).toEqual([
        4,
        '',
        `error: ${id} has already ended: ${how}; there is nothing to abort (see 'npx patchloop show ${id}')\n`,
      ]);
    }
    const sent = await cli(world, ['send', done.workflowId, 'still there?']);
    expect([sent.code, sent.stderr]).toEqual([
      4,
      `error: ${done.workflowId} has already ended: completed at ${await closeTime(done.workflowId)}; it takes no more messages (see 'npx patchloop show ${done.workflowId}')\n`,
    ]);
    const asJson = await cli(world, ['abort', done.workflowId, '--json']);
    expect(JSON.parse(asJson.stderr)).toEqual({ error: { type: 'RunEnded', message: expect.any(String) } });
    // Every command on an id follows the same rule: a decision or an extension for a run that has ended
    // says how it ended (exit 4, as the help promises); the list of waiting calls is empty.
    const closed = `${done.workflowId} has already ended: completed at ${await closeTime(done.workflowId)}`;
    const see = `(see 'npx patchloop show ${done.workflowId}')`;
    const ended: Array<[string[], string]> = [
      [['approve', done.workflowId, 'call_1'], 'nothing of it waits for a decision'],
      [['reject', done.workflowId, 'call_1', '--reason', 'no'], 'nothing of it waits for a decision'],
      [['budget', 'extend', done.workflowId, '--calls', '2'], 'its budget takes no extension'],
    ];
    // Side by side: each is a process of its own.
    const endedResults = await Promise.all(ended.map(([args]) => cli(world, args)));
    expect(endedResults.map((result, at) => [ended[at]![0], result.code, result.stdout, result.stderr])).toEqual(
      ended.map(([args, consequence]) => [args, 4, '', `error: ${closed}; ${consequence} ${see}\n`]),
    );
    const listed = await cli(world, ['approvals', done.workflowId]);
    expect([listed.code, JSON.parse(listed.stdout)]).toEqual([
      0,
      { workflow_id: done.workflowId, pending_approvals: [] },
    ]);
    const missing = await cli(world, ['abort', 'manners-no-such-run']);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      "error: no run or session with id 'manners-no-such-run' (see 'npx patchloop list')\n",
    ]);
    // An id that names nothing: every command says so in the same words, never a bare 'workflow not found'.
    const unknown = [
      ['follow', 'manners-no-such-run'],
      ['approve', 'manners-no-such-run', 'call_1'],
      ['approvals', 'manners-no-such-run'],
      ['budget', 'extend', 'manners-no-such-run', '--calls', '1'],
      ['send', 'manners-no-such-run', 'hello'],
    ];
    const unknownResults = await Promise.all(unknown.map((args) => cli(world, args)));
    expect(unknownResults.map((result, at) => [unknown[at], result.code, result.stdout, result.stderr])).toEqual(
      unknown.map((args) => [args, 1, '', missing.stderr]),
    );
  });
});

describe('closed pipes', () => {
  it('every command ends quietly with 141 when its reader has gone (show | head, chat | head ...)', async ({
    world,
  }) => {
    const run = await world.client.start({ agent: 'assistant', input: 'add 2 and 3' });
    await run.result();
    const id = run.workflowId;
    /** The command with its stdout (or stderr) read by nobody: the reading end is closed at once. */
    const unread = (args: string[], stream: 'stdout' | 'stderr' = 'stdout', stdin = '') =>
      new Promise<{ code: number | null; other: string }>((resolve) => {
        const child = spawn(process.execPath, [cliEntry(), ...args], {
          cwd: repositoryRoot,
          env: { ...process.env, ...env(world) },
        });
        processes.push(child);
        child[stream].destroy();
        let other = '';
        child[stream === 'stdout' ? 'stderr' : 'stdout'].on('data', (data: Buffer) => (other += data.toString()));
        child.on('close', (code) => resolve({ code, other }));
        child.stdin.end(stdin);
      });
    const commands = [
      ['show', id],
      ['show', id, '--json'],
      ['list', '--limit', '3'],
      ['follow', id],
      ['follow', id, '--json'],
      ['run', 'assistant', 'add 1 and 1', '--follow'],
    ];
    for (const args of commands) expect([args, await unread(args)]).toEqual([args, { code: 141, other: '' }]);
    expect(await unread(['chat', 'assistant'], 'stdout', 'hello\n/quit\n')).toEqual({ code: 141, other: '' });
    expect(await unread(['show', 'manners-no-such-run'], 'stderr')).toEqual({ code: 141, other: '' });
  });
});

describe('failed runs in the list', () => {
  it('a run that fails before its agent resolves (an unknown agent) carries its status and agent', async ({
    world,
  }) => {
    const agent = `ghost-${Date.now()}`;
    const run = await cli(world, ['run', agent, 'hello', '--id', `manners-unknown-${agent}`]);
    expect(run.stderr).toBe(`error: unknown agent '${agent}'; this worker serves: assistant, careful-assistant\n`);
    await recordHistory(world.client.run(`manners-unknown-${agent}`), 'unknown-agent-failed-visible');
    const listed = await eventually(async () => {
      const out = await cli(world, ['list', '--status', 'failed', '--agent', agent, '--json']);
      const rows = JSON.parse(out.stdout) as Array<{ workflow_id: string; agent: string; status: string }>;
      return rows.length > 0 ? rows : undefined;
    });
    expect(listed).toEqual([
      expect.objectContaining({ workflow_id: `manners-unknown-${agent}`, agent, status: 'failed' }),
    ]);
    // As an operator (or the UI's filter) asks for them: by patchloop's own attributes.
    const queried = await listedWorkflows(`PatchloopAgent = '${agent}' AND PatchloopStatus = 'failed'`);
    expect(queried.map((entry) => entry.execution.workflowId)).toEqual([`manners-unknown-${agent}`]);
  });
});

describe('sessions in the list', () => {
  it('count their iterations, tool calls and tokens after each turn, as runs do', async ({ world }) => {
    const session = await world.client.startSession({ agent: 'assistant' });
    await session.send('add 2 and 3');
    await session.send('hello');
    const status = await session.status();
    const row = await eventually(async () => {
      const out = await cli(world, ['list', '--json', '--limit', '100']);
      const rows = JSON.parse(out.stdout) as Array<{ workflow_id: string; iterations: number | null }>;
      const found = rows.find((entry) => entry.workflow_id === session.workflowId);
      return found?.iterations === status.iteration ? found : undefined;
    });
    expect(row).toMatchObject({
      type: 'chatSession',
      status: 'running',
      iterations: 3,
      tool_calls: 1,
      total_tokens: status.usage!.total_tokens,
    });
    expect(status.usage!.total_tokens).toBeGreaterThan(0);
    await session.close();
  });
});

describe('on a server of its own, with its web UI', () => {
  // Stopped and started again by the terminal's test; the UI's test reads what the UI reads.
  // The frontend keeps its port across the restart (the worker reconnects to that address); the UI takes
  // a free one at each start, since another process may have taken the old one meanwhile.
  const port = freePort();
  const dbFile = join(mkdtempSync(join(tmpdir(), 'patchloop-manners-')), 'temporal.db');
  const taskQueue = `manners-own-${randomUUID()}`;
  let server: DevServer;
  let worker: WorkerProcess;
  let client: PatchloopClient;
  const serve = async () => startDevServer({ port: await port, uiPort: await freePort(), headless: false, dbFile });
  const shell = () => ({ TEMPORAL_ADDRESS: server.address, PATCHLOOP_TASK_QUEUE: taskQueue });
  it.beforeAll(async ({ world }) => {
    server = await serve();
    worker = await spawnWorker({
      address: server.address,
      taskQueue,
      modelUrl: world.fake.url,
      agents: [assistantAgent, carefulAssistantAgent],
    });
    client = PatchloopClient.on(await Connection.connect({ address: server.address }), { ...world.config, taskQueue });
  });
  afterAll(async () => {
    await client?.close();
    await worker?.kill('SIGKILL');
    await server?.stop();
  });

  it("the UI's list tells an aborted run and one awaiting approval by PatchloopStatus; their pages say so first", async () => {
    const completed = await client.start({ agent: 'assistant', input: 'add 2 and 3' }, { workflowId: 'ui-completed' });
    await completed.result();
    const aborted = await client.start(
      { agent: 'careful-assistant', input: "repeat 'no' 2 times" },
      { workflowId: 'ui-aborted' },
    );
    await eventually(async () => ((await aborted.status()).state === 'awaiting_approval' ? true : undefined));
    await aborted.abort('operator');
    await aborted.result();
    const waiting = await client.start(
      { agent: 'careful-assistant', input: "repeat 'ok' 2 times" },
      { workflowId: 'ui-waiting' },
    );
    const [call] = await eventually(async () => {
      const status = await waiting.status();
      return status.state === 'awaiting_approval' ? status.pending_approvals : undefined;
    });
    // What the UI's list reads (its own server's API): Temporal's status and the run's search attributes.
    const api = `${server.uiUrl}/api/v1/namespaces/default`;
    const decoded = (payload: { data: string } | undefined) =>
      payload && (JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as unknown);
    interface Listed {
      execution: { workflowId: string };
      status: string;
      searchAttributes: { indexedFields: Record<string, { data: string }> };
    }
    const rows = await eventually(async () => {
      const query = encodeURIComponent(`WorkflowId IN ('ui-completed', 'ui-aborted', 'ui-waiting')`);
      const listed = (await (await fetch(`${api}/workflows?query=${query}`)).json()) as { executions?: Listed[] };
      const rows = Object.fromEntries(
        (listed.executions ?? []).map((execution) => [
          execution.execution.workflowId,
          [execution.status, decoded(execution.searchAttributes.indexedFields['PatchloopStatus'])],
        ]),
      );
      return rows['ui-aborted']?.[1] === 'aborted' && rows['ui-waiting']?.[1] === 'awaiting_approval'
        ? rows
        : undefined;
    });
    expect(rows).toEqual({
      'ui-completed': ['WORKFLOW_EXECUTION_STATUS_COMPLETED', 'completed'],
      'ui-aborted': ['WORKFLOW_EXECUTION_STATUS_COMPLETED', 'aborted'],
      'ui-waiting': ['WORKFLOW_EXECUTION_STATUS_RUNNING', 'awaiting_approval'],
    });
    interface Event {
      eventType: string;
      userMetadata?: { summary?: { data: string } };
      timerStartedEventAttributes?: { timerId: string };
      timerFiredEventAttributes?: { timerId: string };
      timerCanceledEventAttributes?: { timerId: string };
      workflowExecutionCompletedEventAttributes?: { result: { payloads: Array<{ data: string }> } };
    }
    const history = async (id: string) =>
      ((await (await fetch(`${api}/workflows/${id}/history`)).json()) as { history: { events: Event[] } }).history
        .events;
    // The waiting run's page: its timeline shows a timer still running whose summary says what it waits for.
    const events = await history('ui-waiting');
    const ended = new Set(
      events.flatMap((event) => [
        event.timerFiredEventAttributes?.timerId,
        event.timerCanceledEventAttributes?.timerId,
      ]),
    );
    const pending = events.filter(
      (event) => event.timerStartedEventAttributes && !ended.has(event.timerStartedEventAttributes.timerId),
    );
    expect(pending.map((event) => decoded(event.userMetadata?.summary))).toEqual([
      `waiting for approval: repeat (${call!.tool_call_id}); decide with npx patchloop approve or reject (npx patchloop approvals ui-waiting)`,
    ]);
    // The aborted run's page: the result, shown beside the input, begins with its status.
    const completion = (await history('ui-aborted')).find((event) => event.workflowExecutionCompletedEventAttributes);
    const result = decoded(completion!.workflowExecutionCompletedEventAttributes!.result.payloads[0]) as Record<
      string,
      unknown
    >;
    expect([Object.keys(result)[0], result['status'], result['abort_reason']]).toEqual([
      'status',
      'aborted',
      'operator',
    ]);
    // Decided, the run goes on: the timer is cancelled, and the run completes.
    await waiting.approve(call!.tool_call_id);
    expect((await waiting.result()).status).toBe('completed');
    await recordHistory(waiting, 'approval-wait-in-timeline');
  });

  it("the worker's terminal says one line per unknown agent, one when the server is unreachable and one when it is back", async () => {
    const from = worker.output().length;
    const ghost = await runCli(['run', 'ghost-agent', 'hi'], shell());
    expect(ghost.code).toBe(1);
    await eventually(() => (worker.output().includes("unknown agent 'ghost-agent'") ? true : undefined));
    await server.stop();
    await eventually(
      () => (worker.output().includes(`cannot reach Temporal at ${server.address}`) ? true : undefined),
      90_000,
      'the worker to say the server is unreachable',
    );
    server = await serve();
    await eventually(
      () => (worker.output().includes(`reconnected to ${server.address}`) ? true : undefined),
      60_000,
      'the worker to say it reconnected',
    );
    expect(worker.output().slice(from).trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        /\[WARN\] run run-\S+ \(agentRun\): activity describeAgentLocally failed: UnknownAgent: unknown agent 'ghost-agent'; this worker serves: assistant, careful-assistant$/,
      ),
      expect.stringMatching(
        new RegExp(
          `\\[WARN\\] cannot reach Temporal at ${server.address} \\(.+\\): the worker keeps trying; runs wait meanwhile$`,
        ),
      ),
      expect.stringMatching(new RegExp(`\\[WARN\\] reconnected to ${server.address}$`)),
    ]);
    // And it works again.
    const run = await runCli(['run', 'assistant', 'add 2 and 3', '--follow'], shell());
    expect(run.stdout).toContain('answer: Done: add returned 5.');
  });
});
