import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect } from 'vitest';
import { callTools, reply, withUsage } from '../../src/fake-model/steps';
import { PATCHLOOP_SEARCH_ATTRIBUTES } from '../../src/common';
import { PrincipalRuns } from '../../src/gateway/principal-runs';
import { RateLimited } from '../../src/gateway/rate-limits';
import { freePort } from '../../src/worker/free-port';
import { cliEntry } from '../../support/compiled';
import { repositoryRoot } from '../../support/repository';
import { runCli, startCliProcess } from '../support/cli';
import { it } from '../support/fixtures';
import { clientOn, listedWorkflows, type TestWorld } from '../support/temporal';
import { eventually } from '../support/wait';

/** The CLI against the test's server and task queue, with the keys file. */
function cli(world: TestWorld, keysFile: string, args: string[]) {
  return runCli(args, {
    TEMPORAL_ADDRESS: world.config.temporalAddress,
    PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
    PATCHLOOP_KEYS_FILE: keysFile,
  });
}

function runCommandIn(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(command, args, { cwd, env, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

async function get(url: string, key?: string) {
  const response = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

// Principals of this file only: listings by principal span the namespace the test files share.
const tag = randomUUID().slice(0, 8);
const who = {
  alice: `alice-${tag}`,
  bob: `bob-${tag}`,
  ops: `ops-${tag}`,
  carol: `carol-${tag}`,
  dave: `dave-${tag}`,
  frank: `frank-${tag}`,
};

describe('the gateway: keys, principals, runs scoped to their principal', () => {
  it('patchloop keys and patchloop serve: each principal sees its own runs only, another run is not found, an admin sees all; a revoked key stops at its next request', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { responder: () => reply('Done.', withUsage(20, 5)) } });
    const keysFile = join(mkdtempSync(join(tmpdir(), 'patchloop-gateway-')), 'keys.json');
    const created: Record<string, string> = {};
    for (const [role, admin] of [
      ['alice', false],
      ['bob', false],
      ['ops', true],
    ] as const) {
      const name = who[role];
      const made = await cli(world, keysFile, ['keys', 'create', name, ...(admin ? ['--admin'] : [])]);
      expect(made.code, made.stderr).toBe(0);
      created[role] = made.stdout.trim();
      expect(made.stderr).toMatch(
        new RegExp(
          `^key [a-f0-9]{12} for ${name}${admin ? ' \\(admin\\)' : ''}: shown this once, .+ keeps its hash only\\n$`,
        ),
      );
    }
    const file = readFileSync(keysFile, 'utf8');
    for (const key of Object.values(created)) expect(file).not.toContain(key);
    expect(statSync(keysFile).mode & 0o777).toBe(0o600);
    const listed = await cli(world, keysFile, ['keys', 'list']);
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID +PRINCIPAL +SCOPE +CREATED +REVOKED$/);
    expect(listed.stdout).toMatch(new RegExp(` ${who.ops} +admin `));

    const port = await freePort();
    const serve = await startCliProcess(
      ['serve', '--port', String(port)],
      {
        TEMPORAL_ADDRESS: world.config.temporalAddress,
        PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
        PATCHLOOP_KEYS_FILE: keysFile,
      },
      { text: 'patchloop gateway at', what: 'the gateway to listen', timeoutMs: 60_000 },
    );
    try {
      const base = `http://127.0.0.1:${port}`;
      expect(serve.output()).toContain(`patchloop gateway at ${base} (agents: assistant, careful-assistant)`);
      // The runs the protocols start, through the same scoped runs.
      const runs = new PrincipalRuns(world.client);
      const alices = await runs.start(
        { name: who.alice, admin: false },
        { agent: 'assistant', input: 'Hi from alice' },
      );
      const bobs = await runs.start({ name: who.bob, admin: false }, { agent: 'assistant', input: 'Hi from bob' });
      await Promise.all([alices.result(), bobs.result()]);

      expect(await get(`${base}/healthz`)).toMatchObject({ status: 200, body: { ok: true } });
      expect((await get(`${base}/v1/principal`, created['alice'])).body).toEqual({ name: who.alice, admin: false });
      const own = await get(`${base}/v1/runs/${alices.workflowId}`, created['alice']);
      expect(own).toMatchObject({
        status: 200,
        body: { workflow_id: alices.workflowId, principal: who.alice, status: 'completed' },
      });
      // Another principal's run answers exactly as a run that does not exist.
      const others = await get(`${base}/v1/runs/${alices.workflowId}`, created['bob']);
      const missing = await get(`${base}/v1/runs/run-nobody-started`, created['bob']);
      expect([others.status, others.body]).toEqual([
        404,
        { error: { type: 'NotFound', message: `no run ${alices.workflowId}` } },
      ]);
      expect([missing.status, missing.body]).toEqual([
        404,
        { error: { type: 'NotFound', message: 'no run run-nobody-started' } },
      ]);
      expect((await get(`${base}/v1/runs/${alices.workflowId}`, created['ops'])).status).toBe(200);
      const ids = async (key: string) =>
        ((await get(`${base}/v1/runs?limit=100`, key)).body['runs'] as Array<{ workflow_id: string }>).map(
          (run) => run.workflow_id,
        );
      await eventually(async () => ((await ids(created['ops']!)).includes(bobs.workflowId) ? true : undefined));
      expect(await ids(created['alice']!)).toEqual([alices.workflowId]);
      expect(await ids(created['bob']!)).toEqual([bobs.workflowId]);
      expect(await ids(created['ops']!)).toEqual(expect.arrayContaining([alices.workflowId, bobs.workflowId]));

      // Recorded from the start: the input names the principal, PatchloopPrincipal holds it.
      const history = await alices.workflow.fetchHistory();
      const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
      expect(defaultPayloadConverter.fromPayload(input)).toMatchObject({
        input: 'Hi from alice',
        principal: who.alice,
      });
      expect(
        (await listedWorkflows(`PatchloopPrincipal = '${who.alice}'`)).map((run) => run.execution.workflowId),
      ).toEqual([alices.workflowId]);
      const byPrincipal = await cli(world, keysFile, ['list', '--principal', who.bob, '--json']);
      expect(
        (JSON.parse(byPrincipal.stdout) as Array<{ workflow_id: string; principal: string }>).map((run) => [
          run.workflow_id,
          run.principal,
        ]),
      ).toEqual([[bobs.workflowId, who.bob]]);

      // The console filters by principal too.
      const consolePort = await freePort();
      const consoleProcess = await startCliProcess(
        ['console', '--port', String(consolePort)],
        { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue },
        { text: 'patchloop console at', what: 'the console to listen', timeoutMs: 60_000 },
      );
      try {
        const page = await (await fetch(`http://127.0.0.1:${consolePort}/?principal=${who.alice}`)).text();
        expect(page).toContain(`data-workflow-id="${alices.workflowId}"`);
        expect(page).toContain(`<div class="sub">by ${who.alice}</div>`);
        expect(page).not.toContain(bobs.workflowId);
        expect(page).toContain(`<input name="principal" value="${who.alice}"`);
        const nobody = await (
          await fetch(`http://127.0.0.1:${consolePort}/?principal=${encodeURIComponent("x' OR 1=1")}`)
        ).text();
        expect(nobody).toContain('No runs found.');
      } finally {
        await consoleProcess.stop();
      }

      // No key, a wrong key, a revoked key: 401 with WWW-Authenticate, nothing else said.
      const none = await get(`${base}/v1/runs`);
      expect([none.status, none.body, none.headers.get('www-authenticate')]).toEqual([
        401,
        { error: { type: 'Unauthorized', message: 'an API key is needed: Authorization: Bearer KEY' } },
        'Bearer realm="patchloop"',
      ]);
      const wrong = await get(`${base}/v1/runs`, `${created['bob']!.slice(0, -2)}xx`);
      expect([wrong.status, wrong.body]).toEqual([
        401,
        { error: { type: 'Unauthorized', message: 'the API key is not valid' } },
      ]);
      const revoked = await cli(world, keysFile, ['keys', 'revoke', who.bob]);
      expect([revoked.code, revoked.stdout]).toEqual([0, `revoked 1 key of ${who.bob}\n`]);
      expect((await get(`${base}/v1/runs`, created['bob'])).status).toBe(401);
      expect((await get(`${base}/v1/runs`, created['alice'])).status).toBe(200);
    } finally {
      await serve.stop();
    }
    expect(await serve.exited).toBe(0);
  });

  it("a principal's session keeps its principal across continue-as-new: input and PatchloopPrincipal", async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { responder: () => reply('Noted.', withUsage(20, 5)) } });
    const dave = { name: who.dave, admin: false };
    const runs = new PrincipalRuns(world.client);
    const session = await runs.startSession(dave, {
      agent: 'assistant',
      continue_as_new: { max_history_events: 10 },
    });
    for (const turn of ['one', 'two', 'three', 'four'])
      expect(await session.send(turn)).toMatchObject({ reply: 'Noted.' });
    const latest = await session.workflow.describe();
    // It continued as new: the chain's earlier execution is listed for dave beside the current one.
    const chain = await eventually(async () => {
      const listed = await world.client.listRuns({ principal: who.dave, limit: 10 });
      return listed.some((run) => run.status === 'continued as new') ? listed : undefined;
    });
    expect(new Set(chain.map((run) => run.workflow_id))).toEqual(new Set([session.workflowId]));
    expect(latest.typedSearchAttributes.get(PATCHLOOP_SEARCH_ATTRIBUTES.principal)).toBe(who.dave);
    const history = await world.client.temporal.workflow.getHandle(session.workflowId, latest.runId).fetchHistory();
    const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    expect(defaultPayloadConverter.fromPayload(input)).toMatchObject({ principal: who.dave });
    expect((await runs.find(dave, session.workflowId))?.summary.principal).toBe(who.dave);
    expect(await runs.find({ name: 'erin', admin: false }, session.workflowId)).toBeUndefined();
    await session.close();
  });

  it("a principal's sub-agent runs are its own too: listed and found for it, not found for another", async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [
        { name: 'lead', instructions: 'You delegate.', subagents: ['helper'] },
        { name: 'helper', instructions: 'You help.' },
      ],
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'helper', arguments: JSON.stringify({ input: 'look it up' }) }]),
          reply('Found it.'),
          reply('The helper found it.'),
        ],
      },
    });
    const frank = { name: who.frank, admin: false };
    const runs = new PrincipalRuns(world.client);
    const run = await runs.start(frank, { agent: 'lead', input: 'Find it.' });
    expect((await run.result()).answer).toBe('The helper found it.');
    const [child] = await run.childRuns();
    expect(child).toBeDefined();
    const found = await runs.find(frank, child!.workflow_id);
    expect(found?.summary).toMatchObject({ agent: 'helper', principal: who.frank });
    expect(await runs.find({ name: 'erin', admin: false }, child!.workflow_id)).toBeUndefined();
    const history = await world.client.temporal.workflow.getHandle(child!.workflow_id).fetchHistory();
    const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    expect(defaultPayloadConverter.fromPayload(input)).toMatchObject({ principal: who.frank });
    const listed = await eventually(async () => {
      const mine = await runs.list(frank, { limit: 10 });
      return mine.length === 2 ? mine : undefined;
    });
    expect(new Set(listed.map((one) => one.workflow_id))).toEqual(new Set([run.workflowId, child!.workflow_id]));
  });

  it('refuses usage errors: no keys file, a bad principal name, a bad limit', async ({ startWorld }) => {
    const world = await startWorld();
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_KEYS_FILE: '' };
    const noFile = await runCli(['keys', 'list'], env);
    expect([noFile.code, noFile.stderr.split('\n')[0]]).toEqual([
      2,
      'error: name the keys file: --keys-file FILE or PATCHLOOP_KEYS_FILE',
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'patchloop-gateway-')), 'keys.json');
    const badName = await runCli(['keys', 'create', "o'brien", '--keys-file', file], env);
    expect(badName.code).toBe(2);
    const badLimit = await runCli(['serve', '--keys-file', file, '--runs-per-minute', '0'], env);
    expect([badLimit.code, badLimit.stderr.split('\n')[0]]).toEqual([
      2,
      'error: --runs-per-minute must be a whole number >= 1',
    ]);
    expect(repositoryRoot).toBeTruthy();
  });

  it('limits a principal: starts per minute, and runs going on (counted by Temporal, across gateways)', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    // A task queue no worker polls: its runs stay running.
    const idle = await clientOn(`${world.config.taskQueue}-idle`);
    try {
      const carol = { name: who.carol, admin: false };
      const perMinute = new PrincipalRuns(idle, { runsPerMinute: 2, concurrentRuns: 100 });
      const started = [
        await perMinute.start(carol, { agent: 'assistant', input: 'one' }),
        await perMinute.start(carol, { agent: 'assistant', input: 'two' }),
      ];
      const third = await perMinute
        .start(carol, { agent: 'assistant', input: 'three' })
        .catch((error: unknown) => error);
      expect(third).toBeInstanceOf(RateLimited);
      expect((third as RateLimited).retryAfterSeconds).toBeGreaterThan(0);
      expect((third as RateLimited).retryAfterSeconds).toBeLessThanOrEqual(60);
      // Another gateway (a fresh count of starts) still sees carol's two runs going on.
      const concurrent = new PrincipalRuns(idle, { runsPerMinute: 100, concurrentRuns: 2 });
      const refused = await eventually(async () => {
        const attempt = await concurrent
          .start(carol, { agent: 'assistant', input: 'four' })
          .catch((error: unknown) => error);
        if (attempt instanceof RateLimited) return attempt;
        started.push(attempt as (typeof started)[number]);
        return undefined;
      });
      expect(refused.message).toMatch(new RegExp(`^${who.carol} has [2-9] runs going on \\(the limit is 2\\)$`));
      expect(refused.retryAfterSeconds).toBe(5);
      await Promise.all(started.map((run) => run.workflow.terminate('test over')));
    } finally {
      await idle.close();
    }
  });
});

describe('docs/gateway.md', () => {
  it('runs its shell blocks as the page writes them (the port aside) and prints what the page shows', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const page = readFileSync(join(repositoryRoot, 'docs', 'gateway.md'), 'utf8');
    // The blocks of the keys, starting and own-routes sections (the protocols' sections have their own tests).
    const blocks = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!).slice(0, 3);
    expect(blocks.map((block) => block.split('\n')[1])).toEqual([
      'KEY=$(patchloop keys create billing-service)   # prints pl_<id>_<secret> once',
      'patchloop serve --port 8400 --agents agents.json &',
      '# {"name":"billing-service","admin":false}',
    ]);
    const home = mkdtempSync(join(tmpdir(), 'patchloop-gateway-docs-'));
    const bin = join(home, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'patchloop'), `#!/bin/sh\nexec "${process.execPath}" "${cliEntry()}" "$@"\n`, {
      mode: 0o755,
    });
    const port = String(await freePort());
    const script = [
      blocks[0],
      blocks[1],
      // The harness waits for the gateway to answer before the next block, as a person would.
      `until curl -s -o /dev/null http://127.0.0.1:8400/healthz; do sleep 0.2; done`,
      blocks[2],
      'kill %1 && wait',
    ]
      .join('\n')
      .replaceAll('8400', port);
    const ran = await runCommandIn('bash', ['-e', '-c', script], home, {
      ...process.env,
      HOME: home,
      PATH: `${bin}:${process.env['PATH']}`,
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
    });
    expect(ran.code, ran.stderr).toBe(0);
    // The admin key (the first one went into KEY), then the list.
    const lines = ran.stdout.split('\n').slice(1);
    expect(ran.stdout).toMatch(/^pl_[a-f0-9]{12}_\S{32}\n/);
    expect(lines[0]).toMatch(/^ID +PRINCIPAL +SCOPE +CREATED +REVOKED$/);
    expect(lines[1]).toMatch(/^[a-f0-9]{12} +billing-service +own runs +\S+Z +-$/);
    expect(lines[2]).toMatch(/^[a-f0-9]{12} +ops +admin +\S+Z +-$/);
    const shown = [...blocks[2]!.matchAll(/^# (.*)$/gm)].map((match) => match[1]);
    expect(lines.slice(3)).toEqual([
      `patchloop gateway at http://127.0.0.1:${port} (agents: support)`,
      shown[0],
      'revoked 1 key of billing-service',
      shown[1],
      '',
    ]);
    expect(existsSync(join(home, '.patchloop', 'keys.json'))).toBe(true);
  });
});
