import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { describe, expect } from 'vitest';
import { shellWords } from '../support/shell-words';
import { z } from 'zod';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { configFromEnvironment } from '../../src/config/environment';
import { FakeModelServer, type ChatRequestBody } from '../../src/fake-model/server';
import { callTools, reply, toolCall, withUsage, type FakeStep } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { freePort } from '../../src/worker/free-port';
import { startDevServer } from '../../src/worker/temporal-cli';
import { repositoryRoot } from '../../support/repository';
import { runCli, startCliWorker } from '../support/cli';
import { it } from '../support/fixtures';
import type { TestWorld } from '../support/temporal';
import { eventually } from '../support/wait';

/** The CLI as a user runs it, against the test's server and task queue. */
function cli(world: { config: { temporalAddress: string; taskQueue: string } }, args: string[]) {
  return runCli(args, { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue });
}

/** A model that answers `answer` with 40 + 10 tokens; with `tool`, it first calls that tool once per run. */
function model(answer: string, tool?: string): (body: ChatRequestBody) => FakeStep {
  return (body) => {
    const messages = body['messages'] as Array<{ role: string }>;
    return tool && messages.at(-1)?.role !== 'tool'
      ? callTools([toolCall('call_1', tool)], withUsage(40, 10))
      : reply(answer, withUsage(40, 10));
  };
}

/** Runs the schedule's fires started, each with when it started and closed. */
async function scheduleRuns(world: TestWorld, name: string) {
  return world.client.listRuns({ schedule: name, limit: 100 });
}

describe('schedules on Temporal Schedules', () => {
  it('--overlap skip under a run slower than the interval: never two runs at once, the skipped fires counted; list --schedule, pause, describe, delete and NotFound', async ({
    startWorld,
  }) => {
    let holding = 0;
    let mostAtOnce = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold = defineTool({
      name: 'hold',
      description: 'Checks the deploy (slowly).',
      parameters: z.object({}),
      execute: async () => {
        holding += 1;
        mostAtOnce = Math.max(mostAtOnce, holding);
        await released;
        holding -= 1;
        return 'deploy green';
      },
    });
    const world = await startWorld({
      tools: [hold],
      agents: [{ name: 'watcher', instructions: 'Check the deploy.', tools: ['hold'] }],
      fake: { responder: model('The deploy is green.', 'hold') },
    });
    const created = await cli(world, [
      'schedule',
      'create',
      'watch',
      '--agent',
      'watcher',
      '--input',
      'Is the deploy green?',
      '--every',
      '2s',
      '--overlap',
      'skip',
    ]);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(
      new RegExp(
        `^created schedule watch \\(${world.config.taskQueue}:watch\\): agent watcher, every 2s; next fire \\S+Z\\n$`,
      ),
    );
    // The first run holds its tool call while the schedule goes on firing: those fires are skipped.
    await eventually(() => (holding === 1 ? true : undefined), undefined, 'the first run to hold');
    const skipped = await eventually(
      async () => {
        const described = await world.client.schedules.describe('watch');
        return described.skipped_overlap >= 2 ? described : undefined;
      },
      undefined,
      'two fires skipped',
    );
    expect(skipped.running).toHaveLength(1);
    expect((await scheduleRuns(world, 'watch')).map((run) => run.status)).toEqual(['running']);
    release();
    await eventually(
      async () =>
        (await scheduleRuns(world, 'watch')).filter((run) => run.status === 'completed').length >= 2 ? true : undefined,
      undefined,
      'two runs completed',
    );
    const paused = await cli(world, ['schedule', 'pause', 'watch', '--reason', 'deploy is done']);
    expect([paused.code, paused.stdout, paused.stderr]).toEqual([0, 'paused schedule watch\n', '']);
    // Fires running when it paused still finish; none starts after.
    await eventually(
      async () => ((await world.client.schedules.describe('watch')).running.length === 0 ? true : undefined),
      undefined,
      'the last fire to end',
    );
    const runs = await eventually(async () => {
      const listed = await scheduleRuns(world, 'watch');
      return listed.every((run) => run.closed !== null) ? listed : undefined;
    });
    expect(mostAtOnce).toBe(1);
    const intervals = runs
      .map((run) => [Date.parse(run.started), Date.parse(run.closed!)] as const)
      .sort((a, b) => a[0] - b[0]);
    for (let index = 1; index < intervals.length; index += 1)
      expect(intervals[index]![0]).toBeGreaterThanOrEqual(intervals[index - 1]![1]);
    expect(runs.every((run) => run.status === 'completed' && run.agent === 'watcher')).toBe(true);

    const listed = await cli(world, ['list', '--schedule', 'watch']);
    expect(listed.code).toBe(0);
    for (const run of runs) expect(listed.stdout).toContain(run.workflow_id);
    const described = await cli(world, ['schedule', 'describe', 'watch']);
    expect(described.code).toBe(0);
    const lines = described.stdout.split('\n');
    const final = await world.client.schedules.describe('watch');
    expect(lines.slice(0, 5)).toEqual([
      `schedule watch (${world.config.taskQueue}:watch): agent watcher, every 2s, overlap skip`,
      'input: Is the deploy green?',
      'state: paused: deploy is done',
      'next fires: -',
      `fires: ${final.fires} started, ${final.skipped_overlap} skipped (overlap), 0 missed (catch-up window)`,
    ]);
    expect(final.fires).toBe(runs.length);
    expect(final.skipped_overlap).toBeGreaterThanOrEqual(2);
    expect(lines[5]).toBe('recent fires:');
    expect(lines[6]).toMatch(
      new RegExp(
        `^  \\S+Z  ${world.config.taskQueue}:watch-\\S+  completed  ${world.config.taskQueue}:watch-\\S+-run-[0-9a-f]{8}  "The deploy is green\\."$`,
      ),
    );
    const list = await cli(world, ['schedule', 'list']);
    expect(list.stdout).toMatch(
      /^NAME +TARGET +WHEN +NEXT FIRE +STATE\nwatch +agent watcher +every 2s +- +paused: deploy is done\n$/,
    );

    const deleted = await cli(world, ['schedule', 'delete', 'watch']);
    expect([deleted.code, deleted.stdout]).toEqual([0, 'deleted schedule watch\n']);
    const gone = await cli(world, ['schedule', 'describe', 'watch']);
    expect([gone.code, gone.stdout, gone.stderr]).toEqual([
      1,
      '',
      `error: no schedule named 'watch' (Temporal schedule id ${world.config.taskQueue}:watch)\n`,
    ]);
    const goneJson = await cli(world, ['schedule', 'trigger', 'watch', '--json']);
    expect(goneJson.code).toBe(1);
    expect(JSON.parse(goneJson.stderr).error.type).toBe('NotFound');
    expect(await cli(world, ['schedule', 'list'])).toMatchObject({ code: 0, stdout: 'no schedules\n' });
  });

  it('a budget that spans its fires: once spent, the schedule pauses itself, says why in describe and list, and starts no run', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'reporter', instructions: 'Report.' }],
      fake: { responder: model('All quiet.') },
    });
    const created = await cli(world, [
      'schedule',
      'create',
      'report',
      '--agent',
      'reporter',
      '--input',
      'Anything new?',
      '--cron',
      // Once a year: only triggers fire during the test.
      '0 0 1 1 *',
      '--budget-calls',
      '2',
      '--budget-tokens',
      '1000',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const fired = async (count: number) =>
      eventually(
        async () => {
          const described = await world.client.schedules.describe('report');
          return described.recent_fires.length >= count && described.recent_fires.every((fire) => fire.outcome)
            ? described
            : undefined;
        },
        undefined,
        `fire ${count} to end`,
      );
    expect(await cli(world, ['schedule', 'trigger', 'report'])).toMatchObject({
      code: 0,
      stdout: 'triggered schedule report\n',
    });
    const first = await fired(1);
    expect(first.spent).toEqual({ total_tokens: 50, llm_calls: 1 });
    expect(first.remaining).toEqual({ max_total_tokens: 950, max_llm_calls: 1 });
    expect(first.paused).toBe(false);
    await cli(world, ['schedule', 'trigger', 'report']);
    const second = await fired(2);
    const note = 'schedule budget exhausted: its runs spent 2 of 2 model calls';
    expect(second).toMatchObject({ paused: true, note, spent: { total_tokens: 100, llm_calls: 2 } });
    // Newest first: the second run had what the first left, the first the schedule's whole budget.
    const runs = await scheduleRuns(world, 'report');
    expect(runs.map((run) => run.status)).toEqual(['completed', 'completed']);
    const limits = await Promise.all(
      runs.map(async (run) => (await world.client.run(run.workflow_id).result()).budget?.limit),
    );
    expect(limits.map((limit) => [limit?.['max_total_tokens'], limit?.['max_llm_calls']])).toEqual([
      [950, 1],
      [1000, 2],
    ]);
    // Unpaused by hand with nothing left: the next fire pauses it again and starts no run.
    await cli(world, ['schedule', 'unpause', 'report']);
    await cli(world, ['schedule', 'trigger', 'report']);
    const third = await fired(3);
    expect(third).toMatchObject({ paused: true, note });
    expect(third.recent_fires.at(-1)!.outcome).toEqual({ outcome: 'schedule_budget_exhausted', note });
    expect(await scheduleRuns(world, 'report')).toHaveLength(2);
    expect(world.fake.requests).toHaveLength(2);
    const described = await cli(world, ['schedule', 'describe', 'report']);
    expect(described.stdout).toContain(`state: paused: ${note}\n`);
    expect(described.stdout).toContain('budget: 100 of 1000 tokens, 2 of 2 model calls spent\n');
    expect(described.stdout).toMatch(
      /\n {2}\S+Z {2}\S+ {2}no run: schedule budget exhausted: its runs spent 2 of 2 model calls\n$/,
    );
    const list = await cli(world, ['schedule', 'list']);
    expect(list.stdout).toContain(`paused: ${note}`);
    await world.client.schedules.delete('report');
  });

  it('a schedule that feeds a session: each fire is a user message, the transcript shows them and the replies; a missing session fails the fire clearly', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'secretary', instructions: 'Take notes.' }],
      fake: { responder: model('Noted.') },
    });
    const session = await world.client.startSession(
      { agent: 'secretary' },
      { sessionId: `notes-${world.config.taskQueue}` },
    );
    const created = await cli(world, [
      'schedule',
      'create',
      'standup',
      '--session',
      session.workflowId,
      '--input',
      'Time for the standup notes.',
      '--cron',
      // Once a year: only triggers fire during the test.
      '0 0 1 1 *',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`: session ${session.workflowId}, cron 0 0 1 1 *;`);
    for (const count of [1, 2]) {
      await world.client.schedules.trigger('standup');
      await eventually(
        async () => {
          const fires = (await world.client.schedules.describe('standup')).recent_fires;
          return fires.length === count && fires.every((fire) => fire.status === 'completed') ? true : undefined;
        },
        undefined,
        `fire ${count}`,
      );
    }
    const transcript = await session.transcript();
    expect(transcript.filter((message) => message['role'] !== 'system')).toEqual([
      { role: 'user', content: 'Time for the standup notes.' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'Time for the standup notes.' },
      { role: 'assistant', content: 'Noted.' },
    ]);
    const described = await world.client.schedules.describe('standup');
    expect(described.recent_fires.map((fire) => fire.outcome)).toEqual([
      { outcome: 'completed', workflow_id: session.workflowId, answer: 'Noted.' },
      { outcome: 'completed', workflow_id: session.workflowId, answer: 'Noted.' },
    ]);

    await world.client.schedules.create({
      name: 'nowhere',
      session: 'no-such-session',
      input: 'hello',
      cron: '0 0 1 1 *',
    });
    await world.client.schedules.trigger('nowhere');
    const failed = await eventually(async () => {
      const fire = (await world.client.schedules.describe('nowhere')).recent_fires[0];
      return fire?.outcome ? fire : undefined;
    });
    expect(failed.outcome).toEqual({
      outcome: 'failed',
      workflow_id: 'no-such-session',
      error: { type: 'UnknownSession', message: "no session with id 'no-such-session'" },
    });
    await world.client.schedules.delete('standup');
    await world.client.schedules.delete('nowhere');
    await session.close();
  });

  it('schedule apply: the schedules of an agents file created, unchanged on re-apply, updated on a change, pruned; usage errors', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'reporter', instructions: 'Report.' }],
      fake: { responder: model('ok') },
    });
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-schedules-'));
    const file = join(folder, 'agents.json');
    const agents = [{ name: 'reporter', instructions: 'Report.' }];
    const write = (schedules: unknown[]) => writeFileSync(file, JSON.stringify({ agents, schedules }));
    const morning = {
      name: 'morning',
      agent: 'reporter',
      input: 'Good morning report.',
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
    };
    const hourly = {
      name: 'hourly',
      agent: 'reporter',
      input: 'Hourly check.',
      every: '1h',
      budget: { max_llm_calls: 24 },
    };
    write([morning, hourly]);
    const apply = (...more: string[]) => cli(world, ['schedule', 'apply', '--agents', file, ...more]);
    expect(await apply()).toMatchObject({ code: 0, stdout: 'created morning\ncreated hourly\n', stderr: '' });
    expect(await apply()).toMatchObject({ code: 0, stdout: 'unchanged morning\nunchanged hourly\n' });
    write([{ ...morning, input: 'Good morning, with the weekend.', cron: '0 9 * * *' }, hourly]);
    expect(await apply()).toMatchObject({ code: 0, stdout: 'updated morning\nunchanged hourly\n' });
    const morningNow = await world.client.schedules.describe('morning');
    expect(morningNow).toMatchObject({
      when: 'cron 0 9 * * * (Europe/Paris)',
      source: 'agents-file',
      definition: { input: 'Good morning, with the weekend.', overlap: 'skip', catchup_window: '5m', jitter: '0s' },
    });
    // A schedule made by hand is never pruned; one the file made and no longer has is.
    await world.client.schedules.create({ name: 'by-hand', agent: 'reporter', input: 'x', every: '1d' });
    write([hourly]);
    expect(await apply('--prune')).toMatchObject({ code: 0, stdout: 'unchanged hourly\ndeleted morning\n' });
    expect((await world.client.schedules.list()).map((schedule) => schedule.name)).toEqual(['by-hand', 'hourly']);

    writeFileSync(file, JSON.stringify({ agents, schedules: [{ name: 'bad', agent: 'reporter', input: 'x' }] }));
    const bad = await apply();
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      `error: agents file ${file}: schedule #1: ✖ a schedule has exactly one of cron, every, at\n`,
    );
    const noWhen = await cli(world, ['schedule', 'create', 'x', '--agent', 'reporter', '--input', 'x']);
    expect(noWhen.code).toBe(2);
    expect(noWhen.stderr).toMatch(
      /^error: ✖ a schedule has exactly one of cron, every, at\nusage: patchloop schedule create/,
    );
    const badEvery = await cli(world, [
      'schedule',
      'create',
      'x',
      '--agent',
      'reporter',
      '--input',
      'x',
      '--every',
      '5 minutes',
    ]);
    expect(badEvery.code).toBe(2);
    expect(badEvery.stderr).toContain('every: a whole number and a unit: 500ms, 30s, 5m, 2h, 1d');
    const past = await cli(world, [
      'schedule',
      'create',
      'x',
      '--agent',
      'reporter',
      '--input',
      'x',
      '--at',
      '2020-01-01T00:00:00Z',
      '--json',
    ]);
    expect([past.code, JSON.parse(past.stderr)]).toEqual([
      1,
      { error: { type: 'InvalidInput', message: '--at 2020-01-01T00:00:00Z is in the past' } },
    ]);
    const taken = await cli(world, [
      'schedule',
      'create',
      'hourly',
      '--agent',
      'reporter',
      '--input',
      'x',
      '--every',
      '1h',
    ]);
    expect([taken.code, taken.stderr]).toEqual([
      1,
      `error: a schedule with id ${world.config.taskQueue}:hourly exists already (delete it first, or use schedule apply)\n`,
    ]);
    const unknownAction = await cli(world, ['schedule', 'frobnicate']);
    expect(unknownAction.code).toBe(2);
    for (const name of ['by-hand', 'hourly']) await world.client.schedules.delete(name);
  });

  it('--at fires once at its time', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [{ name: 'reporter', instructions: 'Report.' }],
      fake: { responder: model('Reminder sent.') },
    });
    const at = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    const created = await cli(world, [
      'schedule',
      'create',
      'once',
      '--agent',
      'reporter',
      '--input',
      'Remind me.',
      '--at',
      at,
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`: agent reporter, at ${at}; next fire ${at.replace('Z', '.000Z')}\n`);
    const runs = await eventually(async () => {
      const listed = await scheduleRuns(world, 'once');
      return listed[0]?.status === 'completed' ? listed : undefined;
    });
    expect(runs).toHaveLength(1);
    const described = await world.client.schedules.describe('once');
    expect(described).toMatchObject({ fires: 1, next_fires: [], next_fire: null });
    await world.client.schedules.delete('once');
  });
});

describe('docs/schedules.md', () => {
  it('runs its commands as the page writes them, and prints what the page shows', async ({ startWorld }) => {
    const world = await startWorld({ fake: { responder: model('The deploy is green.') } });
    const page = readFileSync(join(repositoryRoot, 'docs', 'schedules.md'), 'utf8');
    const blocks = [...page.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((match) => ({
      language: match[1]!,
      text: match[2]!,
    }));
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-schedules-docs-'));
    writeFileSync(join(folder, 'agents.json'), blocks.find((block) => block.language === 'json')!.text);
    const lines = blocks.filter((block) => block.language === 'bash').flatMap((block) => block.text.trim().split('\n'));
    expect(lines).toHaveLength(8);
    const queue = world.config.taskQueue;
    for (const line of lines) {
      const argv = shellWords(line);
      expect(argv.slice(0, 2)).toEqual(['npx', 'patchloop']);
      const args = argv.slice(2).map((word) => (word === 'agents.json' ? join(folder, word) : word));
      const ran = await cli(world, args);
      expect([line, ran.code, ran.stderr]).toEqual([line, 0, '']);
      if (args[1] === 'trigger')
        await eventually(async () =>
          (await world.client.schedules.describe('deploy-check')).recent_fires[0]?.outcome ? true : undefined,
        );
      if (args[1] === 'describe') {
        const shown = ran.stdout.split('\n');
        expect(shown[0]).toBe(
          `schedule deploy-check (${queue}:deploy-check): agent assistant, every 30s, overlap skip`,
        );
        expect(shown.slice(1, 3)).toEqual(['input: Is the deploy green?', 'state: active']);
        // A 30 s boundary may fall during the triggered run: a fire then starts, or is skipped.
        expect(shown[4]).toMatch(/^fires: \d+ started, \d+ skipped \(overlap\), 0 missed \(catch-up window\)$/);
        const completed = new RegExp(
          `^  \\S+Z  ${queue}:deploy-check-\\S+  completed  ${queue}:deploy-check-\\S+-run-[0-9a-f]{8}  "The deploy is green\\."$`,
        );
        expect(shown.slice(5)).toContainEqual(expect.stringMatching(completed));
      }
      if (args[0] === 'list') expect(ran.stdout).toContain(`${queue}:deploy-check-`);
      if (args[1] === 'apply') {
        const shown = blocks[blocks.findIndex((block) => block.text === `${line}\n`) + 1]!;
        expect([shown.language, ran.stdout]).toEqual(['text', shown.text]);
      }
    }
    expect((await world.client.schedules.list()).map((schedule) => schedule.name)).toEqual([
      'heartbeat',
      'morning-report',
    ]);
    for (const name of ['heartbeat', 'morning-report']) await world.client.schedules.delete(name);
  });
});

describe('a schedule and its own dev server', () => {
  it('survives a restart of the dev server: it goes on firing on the same SQLite file; a worker started with an agents file never applies its schedules', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-schedules-restart-'));
    const serverOptions = { port: await freePort(), dbFile: join(folder, 'temporal.db') };
    let server = await startDevServer(serverOptions);
    const fake = await FakeModelServer.start({ responder: model('Still green.') });
    const taskQueue = `schedules-restart-${Date.now()}`;
    const agents: AgentDefinitionInput[] = [{ name: 'reporter', instructions: 'Report.' }];
    const agentsFile = join(folder, 'agents.json');
    writeFileSync(
      agentsFile,
      JSON.stringify({ agents, schedules: [{ name: 'declared', agent: 'reporter', input: 'x', every: '1h' }] }),
    );
    const env = {
      TEMPORAL_ADDRESS: server.address,
      PATCHLOOP_TASK_QUEUE: taskQueue,
      OPENAI_BASE_URL: fake.url,
      OPENAI_API_KEY: 'test-key',
      PATCHLOOP_MODEL: 'fake-model',
    };
    const worker = await startCliWorker(['--agents', agentsFile], env);
    const connect = async () =>
      PatchloopClient.on(await Connection.connect({ address: server.address }), {
        ...configFromEnvironment({}),
        taskQueue,
      });
    let client = await connect();
    try {
      expect(await client.schedules.list()).toEqual([]);
      await client.schedules.create({ name: 'pulse', agent: 'reporter', input: 'Status?', every: '2s' });
      const completed = async (more: number) =>
        eventually(async () => {
          const runs = await client.listRuns({ schedule: 'pulse', limit: 100 });
          return runs.filter((run) => run.status === 'completed').length >= more ? runs : undefined;
        });
      await completed(1);
      const before = (await client.schedules.describe('pulse')).fires;
      await client.close();
      await server.stop();
      server = await startDevServer(serverOptions);
      client = await connect();
      const after = await eventually(async () => {
        const described = await client.schedules.describe('pulse');
        return described.fires >= before + 2 ? described : undefined;
      });
      expect(after).toMatchObject({ paused: false, when: 'every 2s', target: 'agent reporter' });
      await completed(before + 1);
      await client.schedules.delete('pulse');
      expect(await client.schedules.list()).toEqual([]);
    } finally {
      await client.close();
      await worker.stop();
      await server.stop();
      await fake.close();
    }
  });
});
