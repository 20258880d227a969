import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/worker/free-port';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { callTools, failWith, reply } from '../../src/fake-model/steps';
import { type TestWorld } from '../support/temporal';
import { listServerTools } from '../../support/mcp-servers';
import { runCli, startCliWorker } from '../support/cli';
import { repositoryRoot } from '../../support/repository';
import { eventually } from '../support/wait';

/** Runs the CLI as a user would (the compiled CLI, as installed), against the test's server and worker. */
function cli(world: TestWorld, args: string[], stdin = '', env: Record<string, string> = {}) {
  return runCli(
    args,
    { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue, ...env },
    stdin,
  );
}

describe('CLI against a real dev server', () => {
  it('run --follow prints iterations, tool calls and the answer; show and abort work by id', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'c1', name: 'add', arguments: '{"a": 2, "b": 3}' }]), reply('The sum is 5.')] },
    });
    const run = await cli(world, ['run', 'assistant', 'What is 2 + 3?', '--id', 'cli-run-1', '--follow']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('-> add {"a":2,"b":3}');
    expect(run.stdout).toContain('<- add: 5');
    expect(run.stdout).toContain('answer: The sum is 5.');
    const show = await cli(world, ['show', 'cli-run-1', '--json']);
    const shown = JSON.parse(show.stdout) as { status: { state: string }; actions: Record<string, number> };
    expect(shown.status.state).toBe('completed');
    // Billable actions (docs/runs.md#billable-actions): the start (its search attributes set by the
    // client, free), the agent resolved by a local activity in the first workflow task, two model calls
    // (the first runs the fast tool with its reply), and one upsert (completed). Heartbeats
    // are estimated from each model call's time: none under a quarter second, which a loaded machine
    // may exceed, so they are bounded by the calls' count and the time the run took, not fixed.
    const { heartbeats_estimated: heartbeats, ...recorded } = shown.actions;
    expect(recorded).toEqual({
      total: 5 + heartbeats!,
      workflow_starts: 1,
      activities: 2,
      activity_retries: 0,
      local_activity_tasks: 1,
      local_activity_retries: 0,
      timers: 0,
      signals: 0,
      updates: 0,
      search_attribute_upserts: 1,
      memo_upserts: 0,
      child_workflows: 0,
      options_updates: 0,
    });
    expect(heartbeats).toBeLessThanOrEqual(2);
    const shownText = await cli(world, ['show', 'cli-run-1']);
    expect(shownText.stdout).toContain(
      `billable actions: ${5 + heartbeats!} (1 workflow starts, 2 activities, 1 local activity tasks, 1 search attribute upserts${heartbeats ? `, ${heartbeats} heartbeats estimated` : ''})`,
    );
    const followed = await cli(world, ['follow', 'cli-run-1', '--json']);
    const lines = followed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event_type: string });
    expect(lines[0]!.event_type).toBe('react_start');
    expect(lines.at(-1)!.event_type).toBe('react_end');
    const missing = await cli(world, ['abort', 'no-such-run']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("error: no run or session with id 'no-such-run' (see 'npx patchloop list')\n");
    const missingJson = await cli(world, ['show', 'no-such-run', '--json']);
    expect(JSON.parse(missingJson.stderr)).toEqual({
      error: { type: 'NotFound', message: "no run or session with id 'no-such-run' (see 'npx patchloop list')" },
    });
    expect(missing.stdout + missing.stderr).not.toMatch(/\n\s+at /);
  });

  it('chat talks to a session, reconnects to it by id, and send answers with the turn reply', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [reply('hi there'), reply('second reply'), reply('third reply')] },
    });
    const first = await cli(world, ['chat', 'assistant', '--id', 'cli-session'], 'hello\n/quit\n');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('session cli-session');
    expect(first.stdout).toContain('assistant> hi there');
    const again = await cli(world, ['chat', 'assistant', '--id', 'cli-session'], 'still there?\n/quit\n');
    expect(again.stdout).toContain('1 turns so far');
    // A reconnect recaps where the conversation stands.
    expect(again.stdout).toContain('(the last turns)\nyou> hello\nassistant> hi there\n');
    expect(again.stdout).toContain('assistant> second reply');
    const send = await cli(world, ['send', 'cli-session', 'third']);
    expect(JSON.parse(send.stdout)).toMatchObject({
      workflow_id: 'cli-session',
      status: 'completed',
      reply: 'third reply',
      turn: 3,
    });
    const transcript = await world.client.session('cli-session').transcript();
    expect(transcript.filter((m) => m['role'] === 'user').map((m) => m['content'])).toEqual([
      'hello',
      'still there?',
      'third',
    ]);
    world.fake.assertDone();
  });

  it('has manners: --help per command, text from the remaining words, usage errors on stderr with exit code 2', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [callTools([{ id: 'c1', name: 'add', arguments: '{"a": 2, "b": 3}' }]), reply('5')] },
    });
    const help = await cli(world, ['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: patchloop run <agent> <text...>');
    // The top-level help lists every command (here through the checkout's bin/patchloop.js, as
    // `npx patchloop` runs it from sources); a few of them answer --help on their own (a process each).
    const overview = await runCli(['--help'], {}, '', join(repositoryRoot, 'bin', 'patchloop.js'));
    expect(overview.code).toBe(0);
    for (const command of [
      'demo',
      'server',
      'worker',
      'follow',
      'list',
      'show',
      'abort',
      'send',
      'chat',
      'approvals',
      'approve',
      'reject',
      'compile',
      'bundle',
    ])
      expect(overview.stdout).toContain(`\n  ${command} `.replace(/ $/, ''));
    for (const command of ['worker', 'show', 'approve']) {
      const result = await cli(world, [command, '--help']);
      expect([command, result.code, result.stdout.startsWith(`usage: patchloop ${command}`)]).toEqual([
        command,
        0,
        true,
      ]);
    }
    const missingText = await cli(world, ['run', 'assistant']);
    expect([missingText.code, missingText.stdout]).toEqual([2, '']);
    expect(missingText.stderr).toContain('error: missing text\nusage: patchloop run');
    const unknownOption = await cli(world, ['show', 'x', '--verbose']);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toContain("Unknown option '--verbose'");
    const extra = await cli(world, ['abort', 'some-run', 'extra']);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain("error: unexpected argument 'extra'");
    const asJson = await cli(world, ['abort', 'some-run', 'extra', '--json']);
    expect(JSON.parse(asJson.stderr).error).toMatchObject({ type: 'UsageError' });
    // Every remaining word is the text: not "add" alone.
    const run = await cli(world, ['run', 'assistant', 'add', '2', 'and', '3', '--id', 'cli-words']);
    expect(run.code, run.stderr).toBe(0);
    await world.client.run('cli-words').result();
    expect(world.fake.requests[0]!.body.messages.at(-1)).toEqual({ role: 'user', content: 'add 2 and 3' });
    for (const result of [help, missingText, unknownOption, extra, run]) expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('unknown agents fail with the names the worker serves: run and chat', async ({ startWorld }) => {
    const world = await startWorld();
    const run = await cli(world, ['run', 'nosuchagent', 'hi']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("error: unknown agent 'nosuchagent'; this worker serves: assistant\n");
    const chat = await cli(world, ['chat', 'ghostagent'], 'hello\n');
    expect(chat.code).toBe(1);
    expect(chat.stderr).toBe("error: unknown agent 'ghostagent'; this worker serves: assistant\n");
  });

  it('says when no worker takes the run, and names the address it cannot reach', async ({ startWorld }) => {
    const world = await startWorld();
    const lonely = await cli(world, ['run', 'assistant', 'hi', '--id', 'cli-lonely'], '', {
      PATCHLOOP_TASK_QUEUE: 'nobody-polls-here',
    });
    // Started, but waiting for a worker: exit status 3 (test/e2e/cli-manners.test.ts has the details).
    expect(lonely.code, lonely.stderr).toBe(3);
    expect(lonely.stderr).toContain("it is waiting for a worker on task queue 'nobody-polls-here'");
    await world.client.temporal.workflow.getHandle('cli-lonely').terminate('test over');
    const unreachable = await cli(world, ['list'], '', { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^error: cannot reach Temporal at 127\.0\.0\.1:1 \(.*\)\. Start a dev server with 'npx patchloop server', or set TEMPORAL_ADDRESS\.\n$/s,
    );
  });

  it('offline by choice: worker --fake-model serves the demo model, and run ... --follow works as printed', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const taskQueue = `offline-${Date.now()}`;
    // This worker bundles its workflow code itself, as a worker started without a bundle file does.
    const worker = await startCliWorker(
      ['--fake-model'],
      {
        TEMPORAL_ADDRESS: world.config.temporalAddress,
        PATCHLOOP_TASK_QUEUE: taskQueue,
        OPENAI_API_KEY: '',
        OPENAI_BASE_URL: '',
      },
      { ownBundle: true },
    );
    try {
      expect(worker.output()).toContain('model: the offline scripted demo model (--fake-model)');
      expect(worker.output()).not.toContain('workflows from');
      // Quiet by default: no webpack statistics.
      expect(worker.output()).not.toMatch(/webpack|asset workflow-bundle/i);
      const run = await cli(world, ['run', 'assistant', 'add', '2', 'and', '3', '--follow'], '', {
        PATCHLOOP_TASK_QUEUE: taskQueue,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('-> add {"a":2,"b":3}');
      expect(run.stdout).toContain('answer: Done: add returned 5.');
    } finally {
      await worker.stop();
    }
  });

  it('a worker without a provider refuses to start and names both options', async ({ startWorld }) => {
    const world = await startWorld();
    const worker = await cli(world, ['worker'], '', { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain('no model provider configured: set OPENAI_API_KEY');
    expect(worker.stderr).toContain("'npx patchloop worker --fake-model'");
  });

  it('agents that name their own server need no provider in the environment; one whose key variable is unset is refused by name', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-agents-'));
    const agents = join(folder, 'agents.json');
    const provider = { base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_MODEL_KEY_FOR_TEST' };
    writeFileSync(agents, JSON.stringify([{ name: 'local', instructions: 'Answer.', provider }]));
    const worker = await cli(world, ['worker', '--agents', agents], '', { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
    expect(worker.code).toBe(1);
    expect(worker.stderr).not.toContain('no model provider configured');
    expect(worker.stderr).toContain(
      "agent 'local' reads its provider's API key from LOCAL_MODEL_KEY_FOR_TEST, which this worker's environment does not set",
    );
  });

  it("the worker's start line names the agents' own servers, and the worker's only when an agent uses it", async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-agents-'));
    const own = {
      name: 'local',
      instructions: 'Answer.',
      provider: { base_url: 'http://127.0.0.1:9/v1', model: 'smol' },
    };
    const every = join(folder, 'every.json');
    writeFileSync(every, JSON.stringify([own, { ...own, name: 'also-local', model: 'tiny' }]));
    const some = join(folder, 'some.json');
    writeFileSync(some, JSON.stringify([own, { name: 'default', instructions: 'Answer.' }]));
    const env = {
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      PATCHLOOP_TASK_QUEUE: world.config.taskQueue,
      PATCHLOOP_MODEL: 'gpt-4o-mini',
    };
    const startLine = async (file: string, provider: Record<string, string>) => {
      const worker = await startCliWorker(['--agents', file], { ...env, ...provider });
      await worker.stop();
      return /^worker polling .*; (providers?: .*)$/m.exec(worker.output())?.[1];
    };
    expect(await startLine(every, { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' })).toBe(
      "providers: each agent's own (local: http://127.0.0.1:9/v1, model smol; also-local: http://127.0.0.1:9/v1, model tiny)",
    );
    expect(await startLine(some, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:9/shared' })).toBe(
      'provider: http://127.0.0.1:9/shared, model gpt-4o-mini; agents with their own: local: http://127.0.0.1:9/v1, model smol',
    );
  });

  it('a worker whose Redis does not answer refuses to start, naming the address without its password', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const closed = await freePort();
    const worker = await cli(world, ['worker', '--fake-model'], '', {
      REDIS_URL: `redis://:hunter2@127.0.0.1:${closed}`,
    });
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain(`Redis at redis://:***@127.0.0.1:${closed} did not answer within 10000 ms`);
    expect(worker.stderr).not.toContain('hunter2');
    expect(worker.stderr).not.toMatch(/\n\s+at /);
  });

  it('worker capacity and heap growth come from flags or PATCHLOOP_* variables, derived defaults otherwise; bad values are usage errors', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: `tuned-${Date.now()}` };
    const flagged = await startCliWorker(
      ['--fake-model', '--max-cached-workflows', '7', '--heap-growing-percent', '0'],
      env,
    );
    await flagged.stop();
    expect(flagged.output()).toContain("caches up to 7 runs; heap growing at V8's own rate;");
    const fromEnvironment = await startCliWorker(['--fake-model'], {
      ...env,
      PATCHLOOP_MAX_CACHED_WORKFLOWS: '9',
      PATCHLOOP_HEAP_GROWING_PERCENT: '25',
    });
    await fromEnvironment.stop();
    expect(fromEnvironment.output()).toContain('caches up to 9 runs; heap growing 25%;');
    const derived = await startCliWorker(['--fake-model'], env);
    await derived.stop();
    expect(derived.output()).toMatch(/caches up to \d+ runs; heap growing 50%;/);
    // The bundle 'patchloop bundle' wrote for this test run, loaded instead of bundling at start.
    expect(derived.output()).toContain(`workflows from ${process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE']}; `);
    const notABundle = await cli(world, [
      'worker',
      '--fake-model',
      '--workflow-bundle',
      join(repositoryRoot, 'package.json'),
    ]);
    expect([notABundle.code, notABundle.stderr]).toEqual([
      1,
      `error: ${join(repositoryRoot, 'package.json')} is not a workflow bundle written by 'patchloop bundle'\n`,
    ]);
    const missing = await cli(world, [
      'worker',
      '--fake-model',
      '--workflow-bundle',
      join(repositoryRoot, 'no-such.bundle.js'),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: cannot read the workflow bundle .*no-such\.bundle\.js: ENOENT/);
    const bad = await cli(world, ['worker', '--fake-model', '--max-concurrent-activities', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "error: --max-concurrent-activities (PATCHLOOP_MAX_CONCURRENT_ACTIVITIES) must be a whole number from 1, not '0'\n",
    );
    const badGrowth = await cli(world, ['worker', '--fake-model', '--heap-growing-percent', '1001']);
    expect(badGrowth.code).toBe(2);
    expect(badGrowth.stderr).toBe(
      "error: --heap-growing-percent (PATCHLOOP_HEAP_GROWING_PERCENT) must be a whole number from 0 to 1000, not '1001'\n",
    );
  });

  it('worker --metrics-address serves Prometheus metrics: the workflow cache and its hits, the heap', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const taskQueue = `metrics-${Date.now()}`;
    const address = `127.0.0.1:${await freePort()}`;
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: taskQueue };
    const worker = await startCliWorker(['--fake-model', '--metrics-address', address], env);
    try {
      expect(worker.output()).toContain(`metrics on http://${address}/metrics`);
      const run = await cli(world, ['run', 'assistant', 'add', '2', 'and', '3'], '', {
        PATCHLOOP_TASK_QUEUE: taskQueue,
      });
      expect(run.code, run.stderr).toBe(0);
      const value = (text: string, name: string) =>
        [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce(
          (sum, match) => sum + Number(match[1]),
          0,
        );
      // Exported on the SDK's own interval: wait until the finished run is counted.
      const metrics = await eventually(async () => {
        const text = await (await fetch(`http://${address}/metrics`)).text();
        return value(text, 'temporal_workflow_completed') >= 1 ? text : undefined;
      });
      expect(value(metrics, 'temporal_sticky_cache_hit')).toBeGreaterThanOrEqual(1);
      expect(metrics).toMatch(/^temporal_sticky_cache_size\{/m);
      // The first request of the run was read by query; the second was the first plus the reply and the
      // tool result this worker returned, so no query (and no replay, were the run evicted).
      const requests = (source: string) =>
        Number(
          new RegExp(`^patchloop_llm_requests\\{[^}]*source="${source}"[^}]*\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0,
        );
      expect([requests('query'), requests('predicted')]).toEqual([1, 1]);
      expect(value(metrics, 'patchloop_worker_heap_used_bytes')).toBeGreaterThan(10 * 2 ** 20);
      expect(value(metrics, 'patchloop_worker_heap_limit_bytes')).toBeGreaterThan(
        value(metrics, 'patchloop_worker_heap_used_bytes'),
      );
    } finally {
      await worker.stop();
    }
    const bad = await cli(world, ['worker', '--fake-model', '--metrics-address', 'port-9464']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "error: --metrics-address (PATCHLOOP_METRICS_ADDRESS): metrics address 'port-9464' is not HOST:PORT (for example 0.0.0.0:9464)\n",
    );
  });

  it('server fails on a busy port instead of reporting the other server as its own', async ({ startWorld }) => {
    const world = await startWorld();
    const busy = Number(world.config.temporalAddress.split(':').at(-1));
    const server = await cli(world, ['server', '--port', String(busy)]);
    expect(server.code).toBe(1);
    expect(server.stderr).toBe(
      `error: port ${busy} is in use (another Temporal server?): choose another with --port\n`,
    );
  });

  it('list filters by agent and status over the search attributes; show tells a failure and the tool calls', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [
        { name: 'assistant', instructions: 'test', tools: ['add'] },
        { name: 'other', instructions: 'test', tools: [] },
      ],
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'add', arguments: '{"a": 2, "b": 3}' }]),
          reply('5'),
          failWith(400, { message: 'bad request: no such model' }),
        ],
      },
    });
    await (await world.client.start({ agent: 'assistant', input: 'add' }, { workflowId: 'cli-list-done' })).result();
    const failing = await world.client.start({ agent: 'other', input: 'fail' }, { workflowId: 'cli-list-failed' });
    await failing.result().catch(() => undefined);
    const listed = await eventually(async () => {
      const out = await cli(world, ['list', '--agent', 'assistant', '--status', 'completed', '--json']);
      const rows = JSON.parse(out.stdout) as Array<{ workflow_id: string }>;
      return rows.some((row) => row.workflow_id === 'cli-list-done') ? rows : undefined;
    });
    expect(listed.find((row) => row.workflow_id === 'cli-list-done')).toMatchObject({
      type: 'agentRun',
      agent: 'assistant',
      status: 'completed',
      iterations: 2,
      tool_calls: 1,
    });
    expect(listed.some((row) => row.workflow_id === 'cli-list-failed')).toBe(false);
    const failedRows = await eventually(async () => {
      // Filtered by its agent too: other test files create failed runs on the same server meanwhile.
      const out = await cli(world, ['list', '--status', 'failed', '--agent', 'other']);
      return out.stdout.includes('cli-list-failed') ? out.stdout : undefined;
    });
    expect(failedRows.split('\n')[0]).toMatch(/^WORKFLOW ID\s+TYPE\s+AGENT\s+STATUS/);
    const show = await cli(world, ['show', 'cli-list-failed']);
    expect(show.stdout).toContain(
      'failed: ProviderRejected: the model call failed: provider rejected the request (400)',
    );
    const shown = await cli(world, ['show', 'cli-list-done']);
    expect(shown.stdout).toContain('[calls add {"a": 2, "b": 3}]');
    expect(shown.stdout).toContain('tool      add: 5');
    const followed = await cli(world, ['follow', 'cli-list-done']);
    // The stream was missed (the run had finished): the answer's text comes from the event log.
    expect(followed.stdout).toMatch(/\n {4}5\n/);
  });

  it('mcp tools lists what an agent gets from its MCP servers without a Temporal server; a server that will not start fails by name', async () => {
    const everything = createRequire(__filename).resolve('@modelcontextprotocol/server-everything/dist/index.js');
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-mcp-cli-'));
    const agents = join(folder, 'agents.json');
    const server = { name: 'everything', command: process.execPath, args: [everything, 'stdio'] };
    writeFileSync(
      agents,
      JSON.stringify([
        {
          name: 'mcp-user',
          instructions: 'Use the tools.',
          tools: ['add'],
          mcp_servers: [{ ...server, tool_prefix: 'ev.', tools: ['get-sum', 'echo'] }],
        },
        {
          name: 'mcp-broken',
          instructions: 'Use the tools.',
          mcp_servers: [{ name: 'gone', command: '/no/such/mcp' }],
        },
      ]),
    );
    const listed = await listServerTools(server.command, server.args);
    // No TEMPORAL_ADDRESS that answers: the command talks to the MCP servers only.
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:9' };

    const one = await runCli(['mcp', 'tools', '--agents', agents, 'mcp-user', '--json'], env);
    expect(one.code, one.stderr).toBe(0);
    const [user] = (
      JSON.parse(one.stdout) as {
        agents: Array<{ agent: string; servers: Array<{ server: string; tools: Array<Record<string, unknown>> }> }>;
      }
    ).agents;
    expect(user!.agent).toBe('mcp-user');
    const tools = user!.servers[0]!.tools;
    // The server's order, the allow-list applied, the prefix made provider-safe.
    expect(tools.map((tool) => tool['name'])).toEqual(
      listed.filter((tool) => ['get-sum', 'echo'].includes(tool.name)).map((tool) => `ev_${tool.name}`),
    );
    const echo = listed.find((tool) => tool.name === 'echo')!;
    expect(tools.find((tool) => tool['name'] === 'ev_echo')).toEqual({
      name: 'ev_echo',
      description: echo.description,
      parameters: echo.inputSchema,
      // server-everything annotates echo read-only: a call a crash interrupted is sent again.
      mcp: { server: 'everything', tool: 'echo', repeatable: true, idle_seconds: 60, total_seconds: 600 },
    });

    const text = await runCli(['mcp', 'tools', '--agents', agents, 'mcp-user'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('agent mcp-user\n  server everything: 2 tool(s)\n');
    expect(text.stdout).toContain(
      `    ev_echo: ${echo.description}\n      parameters: message (string, required)\n` +
        '      interrupted by a crash: sent again (read-only or idempotent)\n',
    );

    const all = await runCli(['mcp', 'tools', '--agents', agents, '--json'], env);
    expect(all.code).toBe(1);
    const listings = (JSON.parse(all.stdout) as { agents: Array<{ agent: string; servers: unknown[] }> }).agents;
    expect(listings.map((listing) => listing.agent)).toEqual(['mcp-user', 'mcp-broken']);
    expect(listings[1]!.servers).toEqual([
      {
        server: 'gone',
        error: { type: 'McpServerUnavailable', message: expect.stringMatching(/^MCP server 'gone' did not start: /) },
      },
    ]);
    expect(JSON.parse(all.stderr)).toEqual({
      error: { type: 'McpServerUnavailable', message: expect.stringContaining("MCP server 'gone' did not start") },
    });
    const broken = await runCli(['mcp', 'tools', '--agents', agents, 'mcp-broken'], env);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(
      /^agent mcp-broken\n {2}server gone: McpServerUnavailable: MCP server 'gone' did not start: /,
    );
    expect(broken.stderr).toMatch(/^error: MCP server 'gone' did not start: /);
    expect(broken.stdout + broken.stderr).not.toMatch(/\n\s+at /);
  });
});
