import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { RunFailedError, type RunHandle } from '../../src/client/patchloop-client';
import { pendingHeartbeatDetails } from '../../src/streaming/chunk-client';
import { freePort } from '../../src/worker/free-port';
import { historyText } from '../support/history-text';
import {
  everythingEntry,
  everythingStdio,
  listServerTools,
  offeredTools,
  startEverythingHttp,
  toolMessages,
} from '../../support/mcp-servers';
import { runCli } from '../support/cli';
import { eventually } from '../support/wait';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { workflowBundle } from '../support/temporal';

const folder = mkdtempSync(join(tmpdir(), 'patchloop-mcp-'));
const TOOLS = ['echo', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation'];

const stdioServer = everythingStdio;

function agent(servers: unknown[], limits: Record<string, unknown> = {}): AgentDefinitionInput {
  return { name: 'mcp-user', instructions: 'Use the tools.', mcp_servers: servers, limits } as AgentDefinitionInput;
}

/** The server's own listing, asked directly, to compare with what the model is offered. */
let listed: Array<{ name: string; description?: string; inputSchema: unknown }> = [];
let http: ChildProcess | undefined;
let httpUrl = '';

beforeAll(async () => {
  listed = await listServerTools(process.execPath, [everythingEntry, 'stdio']);
  const port = await freePort();
  http = await startEverythingHttp(port);
  httpUrl = `http://127.0.0.1:${port}/mcp`;
});

afterAll(() => {
  http?.kill();
});

function schemaOf(name: string) {
  const tool = listed.find((entry) => entry.name === name)!;
  return { name: tool.name, description: tool.description, inputSchema: tool.inputSchema };
}

describe('MCP tools', () => {
  it('over stdio: offers the allowed tools, prefixed, with the server schemas; text, sums, images and errors as the model receives them', async ({
    startWorld,
  }) => {
    const pidFile = join(folder, 'stdio.pid');
    const world = await startWorld({
      agents: [agent([stdioServer(pidFile, { tools: TOOLS, tool_prefix: 'ev.' })])],
      fake: {
        script: [
          callTools([
            { id: 'c1', name: 'ev_echo', arguments: '{"message": "hi"}' },
            { id: 'c2', name: 'ev_get-sum', arguments: '{"a": 2, "b": 3}' },
            { id: 'c3', name: 'ev_get-sum', arguments: '{"a": "two"}' },
            { id: 'c4', name: 'ev_get-tiny-image', arguments: '{}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(offeredTools(world.fake.requests[0]!.body).map((tool) => tool.function)).toEqual(
      TOOLS.map((name) => {
        const tool = schemaOf(name);
        return { name: `ev_${name}`, description: tool.description, parameters: tool.inputSchema };
      }),
    );
    const tools = toolMessages(world.fake.requests[1]!.body);
    expect(tools.slice(0, 2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'Echo: hi' },
      { role: 'tool', tool_call_id: 'c2', content: 'The sum of 2 and 3 is 5.' },
    ]);
    expect(tools[2]).toMatchObject({ role: 'tool', tool_call_id: 'c3' });
    const error = JSON.parse(String(tools[2]!.content)) as { error: string };
    expect(error.error).toMatch(
      /^Tool 'ev_get-sum' failed during execution or result parsing with arguments \{"a": "two"\}: /,
    );
    expect(error.error).toMatch(/Input validation error/);
    // The image goes the multimodal way: a caption with the server's text, then the image part.
    const last = world.fake.requests[1]!.body.messages.at(-1) as {
      role: string;
      content: Array<Record<string, unknown>>;
    };
    expect(last.role).toBe('user');
    expect(last.content[0]!['text']).toMatch(/^This is images and description returned by tool 'ev_get-tiny-image': /);
    expect(last.content[1]).toMatchObject({ type: 'image_url', image_url: { detail: 'auto' } });
    expect((last.content[1] as { image_url: { url: string } }).image_url.url).toMatch(/^data:image\/png;base64,/);
    // The tools were recorded with the run: its history replays on a fresh worker, no server needed.
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle() },
      await run.workflow.fetchHistory(),
      run.workflow.workflowId,
    );
  });

  it('over streamable HTTP: headers from the worker environment never reach history', async ({ startWorld }) => {
    process.env['PATCHLOOP_TEST_MCP_TOKEN'] = 'very-secret-token-4711';
    const world = await startWorld({
      agents: [
        agent([
          {
            name: 'remote',
            url: httpUrl,
            headers: { Authorization: 'Bearer ${PATCHLOOP_TEST_MCP_TOKEN}' },
            tools: ['echo', 'get-sum'],
          },
        ]),
      ],
      fake: {
        script: [
          callTools([
            { id: 'h1', name: 'echo', arguments: '{"message": "over http"}' },
            { id: 'h2', name: 'get-sum', arguments: '{"a": 40, "b": 2}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    expect((await run.result()).status).toBe('completed');
    expect(offeredTools(world.fake.requests[0]!.body).map((tool) => tool.function.name)).toEqual(['echo', 'get-sum']);
    expect(toolMessages(world.fake.requests[1]!.body)).toEqual([
      { role: 'tool', tool_call_id: 'h1', content: 'Echo: over http' },
      { role: 'tool', tool_call_id: 'h2', content: 'The sum of 40 and 2 is 42.' },
    ]);
    // Every payload of the run's history, decoded (payload data is base64 in the JSON form).
    const history = historyText(await run.workflow.fetchHistory());
    expect(history).toContain('${PATCHLOOP_TEST_MCP_TOKEN}');
    expect(history).not.toContain('very-secret-token-4711');
  });

  it('over streamable HTTP: a server that restarted (its sessions gone) is reconnected and the call goes through', async ({
    startWorld,
  }) => {
    const port = await freePort();
    let server = await startEverythingHttp(port);
    try {
      const world = await startWorld({
        agents: [agent([{ name: 'restarting', url: `http://127.0.0.1:${port}/mcp`, tools: ['echo'] }])],
        fake: {
          script: [
            callTools([{ id: 'r1', name: 'echo', arguments: '{"message": "before"}' }]),
            callTools([{ id: 'r2', name: 'echo', arguments: '{"message": "after"}' }], { firstChunkDelayMs: 3000 }),
            reply('done'),
          ],
        },
      });
      const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
      await eventually(() => (world.fake.requests.length >= 2 ? true : undefined));
      server.kill();
      await new Promise((resolve) => server.once('exit', resolve));
      server = await startEverythingHttp(port);
      expect((await run.result()).status).toBe('completed');
      expect(toolMessages(world.fake.requests[2]!.body)).toEqual([
        { role: 'tool', tool_call_id: 'r1', content: 'Echo: before' },
        { role: 'tool', tool_call_id: 'r2', content: 'Echo: after' },
      ]);
    } finally {
      server.kill();
    }
  });

  it('an abort during a long call ends the run aborted within seconds', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [agent([stdioServer(join(folder, 'abort.pid'))])],
      fake: {
        script: [
          callTools([{ id: 'l1', name: 'trigger-long-running-operation', arguments: '{"duration": 60, "steps": 60}' }]),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    // The server's progress notifications show in the batch's heartbeat details.
    await callProgress(run, 'l1', (progress) => progress.progress >= 1 && progress.total === 60);
    const started = Date.now();
    await run.abort('user_interrupt');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(8000);
  });

  it('a server killed mid-call gives that call an error naming the server, and the run goes on', async ({
    startWorld,
  }) => {
    const pidFile = join(folder, 'killed.pid');
    const world = await startWorld({
      agents: [agent([stdioServer(pidFile)])],
      fake: {
        script: [
          callTools([{ id: 'k1', name: 'trigger-long-running-operation', arguments: '{"duration": 60, "steps": 60}' }]),
          callTools([{ id: 'k2', name: 'echo', arguments: '{"message": "again"}' }]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    // The server is in the middle of the call: it has reported progress.
    await callProgress(run, 'k1', (progress) => progress.progress >= 1);
    const firstPid = Number(readFileSync(pidFile, 'utf8'));
    process.kill(firstPid, 'SIGKILL');
    const result = await run.result();
    expect(result.status).toBe('completed');
    const killed = JSON.parse(String(toolMessages(world.fake.requests[1]!.body)[0]!.content)) as { error: string };
    expect(killed.error).toMatch(/MCP server 'everything' failed: /);
    // The next call starts the server again.
    expect(toolMessages(world.fake.requests[2]!.body)[1]).toEqual({
      role: 'tool',
      tool_call_id: 'k2',
      content: 'Echo: again',
    });
    expect(Number(readFileSync(pidFile, 'utf8'))).not.toBe(firstPid);
  });

  it('a server that cannot list its tools fails the run at its start with McpServerUnavailable', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [
        agent([
          { name: 'broken', command: process.execPath, args: ['-e', 'console.error("no way"); process.exit(3)'] },
        ]),
      ],
      fake: { script: [reply('never')] },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const error = await run.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('McpServerUnavailable');
    expect((error as RunFailedError).message).toMatch(/MCP server 'broken' did not start: .*attempt 3 of 3/);
    expect(world.fake.requests).toHaveLength(0);
  });
});

describe('patchloop mcp tools', () => {
  it("lists the MCP tools of agents that also use a worker's own tools, taken by name (the command does not load them)", async () => {
    const agents = join(folder, 'agents-with-own-tools.json');
    const server = { name: 'everything', command: process.execPath, args: [everythingEntry, 'stdio'] };
    writeFileSync(
      agents,
      JSON.stringify([
        {
          name: 'payer',
          instructions: 'Pay.',
          // charge and refund come from a worker's --tools module; add is an example tool.
          tools: ['charge', 'refund', 'add'],
          mcp_servers: [{ ...server, tools: ['echo'] }],
          needs_approval: ['charge', 'echo'],
        },
        // Its own tool is named like the server's: the names clash, as they would in a run.
        { name: 'clashing', instructions: 'Echo.', tools: ['echo'], mcp_servers: [{ ...server, tools: ['echo'] }] },
      ]),
    );
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:9' };
    const text = await runCli(['mcp', 'tools', '--agents', agents, 'payer'], env);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    const echo = schemaOf('echo');
    expect(text.stdout).toBe(
      'agent payer\n' +
        "  its own tools (a worker's --tools, not checked here): charge, refund\n" +
        '  server everything: 1 tool(s)\n' +
        `    echo: ${echo.description}\n` +
        '      parameters: message (string, required)\n' +
        '      interrupted by a crash: sent again (read-only or idempotent)\n',
    );
    const json = await runCli(['mcp', 'tools', '--agents', agents, 'payer', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      agents: [
        {
          agent: 'payer',
          servers: [
            {
              server: 'everything',
              tools: [
                {
                  name: 'echo',
                  description: echo.description,
                  parameters: echo.inputSchema,
                  mcp: { server: 'everything', tool: 'echo', repeatable: true, idle_seconds: 60, total_seconds: 600 },
                },
              ],
            },
          ],
        },
      ],
    });
    const clash = await runCli(['mcp', 'tools', '--agents', agents, 'clashing'], env);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/^error: agent 'clashing'.*echo/);
  });
});

/** Waits until the batch's heartbeat details show the call's MCP progress as `matches` wants it. */
function callProgress(
  run: RunHandle,
  callId: string,
  matches: (progress: { progress: number; total?: number }) => boolean,
): Promise<true> {
  return eventually(
    async () => {
      const progress = (await pendingHeartbeatDetails(run.workflow))
        .map(
          (details) =>
            (details['progress'] as Record<string, { progress: number; total?: number }> | undefined)?.[callId],
        )
        .find((entry) => entry !== undefined);
      return progress !== undefined && matches(progress) ? true : undefined;
    },
    30_000,
    `progress of call ${callId}`,
  );
}
