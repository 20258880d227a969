import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { RunFailedError, type RunHandle } from '../../src/client/patchloop-client';
import { callTools, reply } from '../../src/fake-model/steps';
import { rejectedCallContent, type AgentDefinitionInput } from '../../src/runtime';
import { createPatchloopWorker } from '../../src/worker/create-worker';
import { runCli } from '../support/cli';
import { everythingLauncher, filesystemServerBin, toolMessages } from '../../support/mcp-servers';
import { temporalAddress } from '../support/temporal';
import { awaitingApproval } from '../support/wait';

// Real servers nobody on the project wrote (devDependencies): server-everything through the launcher that
// writes its pid to a file, server-filesystem for a side effect one can see (a file written or not).
const folder = mkdtempSync(join(tmpdir(), 'patchloop-mcp-approve-'));

/** server-everything over stdio, its tools seen as `ev_echo` and `ev_get-sum`; its process writes its pid to `pidFile`. */
function everything(pidFile: string) {
  return {
    name: 'everything',
    command: process.execPath,
    args: [everythingLauncher, pidFile],
    tools: ['echo', 'get-sum'],
    tool_prefix: 'ev.',
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The run's activities in history: type, task queue and the identity of the worker that started it. */
async function activities(run: RunHandle): Promise<Array<{ type: string; queue: string; worker: string }>> {
  const events = (await run.workflow.fetchHistory()).events ?? [];
  const started = new Map(
    events.flatMap((event) => {
      const attributes = event.activityTaskStartedEventAttributes;
      return attributes ? [[Number(attributes.scheduledEventId), attributes.identity ?? '']] : [];
    }),
  );
  return events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    if (!attributes) return [];
    return [
      {
        type: attributes.activityType!.name!,
        queue: attributes.taskQueue!.name!,
        worker: started.get(Number(event.eventId)) ?? '',
      },
    ];
  });
}

describe('approval and routing of MCP tools', () => {
  it('gates MCP calls the agent lists: approved ones run on the server, rejected ones never reach it', async ({
    startWorld,
  }) => {
    const allowed = realpathSync(mkdtempSync(join(tmpdir(), 'patchloop-mcp-approve-fs-')));
    const approvedFile = join(allowed, 'approved.txt');
    const rejectedFile = join(allowed, 'rejected.txt');
    const world = await startWorld({
      agents: [
        {
          name: 'careful',
          instructions: 'Use the tools.',
          mcp_servers: [
            everything(join(folder, 'approve.pid')),
            {
              name: 'files',
              command: process.execPath,
              args: [filesystemServerBin(), allowed],
              tools: ['write_file'],
              tool_prefix: 'fs_',
            },
          ],
          needs_approval: ['ev_echo', 'fs_write_file'],
        } as AgentDefinitionInput,
      ],
      fake: {
        script: [
          callTools([
            // Arguments cut short, as a model may stream them: repaired before anyone is asked.
            { id: 'e1', name: 'ev_echo', arguments: '{"message": "approved text"' },
            { id: 'w1', name: 'fs_write_file', arguments: JSON.stringify({ path: approvedFile, content: 'yes' }) },
            { id: 's1', name: 'ev_get-sum', arguments: '{"a": 2, "b": 3}' },
          ]),
          callTools([
            { id: 'e2', name: 'ev_echo', arguments: '{"message": "rejected text"}' },
            { id: 'w2', name: 'fs_write_file', arguments: JSON.stringify({ path: rejectedFile, content: 'no' }) },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'careful', input: 'go' });

    // The first batch waits for its two gated calls; the ungated sum waits with them.
    const first = await awaitingApproval(run, ['e1', 'w1']);
    expect(first).toEqual([
      {
        tool_call_id: 'e1',
        tool_name: 'ev_echo',
        arguments: { message: 'approved text' },
        requested_at: expect.any(String),
      },
      {
        tool_call_id: 'w1',
        tool_name: 'fs_write_file',
        arguments: { path: approvedFile, content: 'yes' },
        requested_at: expect.any(String),
      },
    ]);
    expect(await run.pendingApprovals()).toEqual(first);
    // Nothing ran yet: no tool batch, no file.
    expect((await activities(run)).map((activity) => activity.type)).toEqual([
      'describeAgent',
      'llmPhase',
      'reviewToolCalls',
    ]);
    expect(existsSync(approvedFile)).toBe(false);

    expect(await run.approve('e1')).toEqual({ tool_call_id: 'e1', approved: true });
    expect(await run.approve('w1')).toEqual({ tool_call_id: 'w1', approved: true });
    await awaitingApproval(run, ['e2', 'w2']);
    // The model received the servers' real results of the approved calls.
    expect(toolMessages(world.fake.requests[1]!.body)).toEqual([
      { role: 'tool', tool_call_id: 'e1', content: 'Echo: approved text' },
      {
        role: 'tool',
        tool_call_id: 'w1',
        // The server's text, then its structured content.
        content: `Successfully wrote to ${approvedFile}\n${JSON.stringify({ content: `Successfully wrote to ${approvedFile}` })}`,
      },
      { role: 'tool', tool_call_id: 's1', content: 'The sum of 2 and 3 is 5.' },
    ]);
    expect(readFileSync(approvedFile, 'utf8')).toBe('yes');

    expect(await run.reject('e2', 'not this one')).toEqual({ tool_call_id: 'e2', approved: false });
    expect(await run.reject('w2', 'no writes')).toEqual({ tool_call_id: 'w2', approved: false });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('done');
    expect(toolMessages(world.fake.requests[2]!.body).slice(3)).toEqual([
      { role: 'tool', tool_call_id: 'e2', content: rejectedCallContent('ev_echo', 'not this one') },
      { role: 'tool', tool_call_id: 'w2', content: rejectedCallContent('fs_write_file', 'no writes') },
    ]);
    // The rejected calls never reached a server: no file, and no tool batch after the first one.
    expect(existsSync(rejectedFile)).toBe(false);
    expect((await activities(run)).map((activity) => activity.type)).toEqual([
      'describeAgent',
      'llmPhase',
      'reviewToolCalls',
      'toolBatch',
      'llmPhase',
      'reviewToolCalls',
      'llmPhase',
    ]);
    const events = (await run.status()).events;
    expect(
      events.flatMap((event) =>
        event.event_type === 'approval_decided' ? [[event.tool_call_id, event.tool_name, event.approved]] : [],
      ),
    ).toEqual([
      ['e1', 'ev_echo', true],
      ['w1', 'fs_write_file', true],
      ['e2', 'ev_echo', false],
      ['w2', 'fs_write_file', false],
    ]);
    world.fake.assertDone();
  });

  it('routes an MCP tool to a tools-only worker, which runs the call with its own server process', async ({
    startWorld,
  }) => {
    const mcpQueue = `mcp-tools-${randomUUID()}`;
    const mainPid = join(folder, `main-${mcpQueue}.pid`);
    const toolsPid = join(folder, `tools-${mcpQueue}.pid`);
    // Each worker has the agent from its own configuration: the same server, started by each worker
    // itself (the pid file tells their processes apart).
    const routed = (pidFile: string): AgentDefinitionInput =>
      ({
        name: 'router',
        instructions: 'Use the tools.',
        mcp_servers: [everything(pidFile)],
        tool_task_queues: { ev_echo: mcpQueue },
      }) as AgentDefinitionInput;
    const world = await startWorld({
      agents: [routed(mainPid)],
      fake: {
        script: [
          callTools([
            { id: 'r1', name: 'ev_echo', arguments: '{"message": "routed"}' },
            { id: 'r2', name: 'ev_get-sum', arguments: '{"a": 40, "b": 2}' },
          ]),
          reply('done'),
        ],
      },
    });
    const connection = await NativeConnection.connect({ address: temporalAddress() });
    cleanups.push(() => connection.close());
    // A queue nothing is routed to is still refused, MCP servers or not.
    await expect(
      createPatchloopWorker({
        connection,
        config: { ...world.config, taskQueue: `nobody-${randomUUID()}` },
        agents: [routed(toolsPid)],
        tools: [],
        toolsOnly: true,
      }),
    ).rejects.toThrow(/no agent routes a tool to task queue 'nobody-/);
    const tools = await createPatchloopWorker({
      connection,
      config: { ...world.config, taskQueue: mcpQueue },
      agents: [routed(toolsPid)],
      tools: [],
      toolsOnly: true,
      workerOptions: { identity: 'mcp-tools-worker' },
    });
    const running = tools.run();
    cleanups.push(async () => {
      tools.shutdown();
      await running;
    });

    const run = await world.client.start({ agent: 'router', input: 'go' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(toolMessages(world.fake.requests[1]!.body)).toEqual([
      { role: 'tool', tool_call_id: 'r1', content: 'Echo: routed' },
      { role: 'tool', tool_call_id: 'r2', content: 'The sum of 40 and 2 is 42.' },
    ]);
    // One batch per queue: the echo went to the MCP queue and the tools-only worker took it.
    const batches = (await activities(run)).filter((activity) => activity.type === 'toolBatch');
    expect(batches).toHaveLength(2);
    expect(batches.find((batch) => batch.queue === mcpQueue)?.worker).toBe('mcp-tools-worker');
    expect(batches.find((batch) => batch.queue !== mcpQueue)?.queue).toBe(world.config.taskQueue);
    // Two server processes: the main worker's (listing at the run's start, then the sum) and the tools
    // worker's, which it started for the echo, its only MCP work.
    const mainServer = Number(readFileSync(mainPid, 'utf8'));
    const toolsServer = Number(readFileSync(toolsPid, 'utf8'));
    expect(mainServer).toBeGreaterThan(0);
    expect(toolsServer).toBeGreaterThan(0);
    expect(toolsServer).not.toBe(mainServer);
  });

  it('a needs_approval or tool_task_queues name no tool has fails the run at its start, as patchloop mcp tools says', async ({
    startWorld,
  }) => {
    const definition = {
      name: 'misnamed',
      instructions: 'Use the tools.',
      tools: ['add'],
      mcp_servers: [everything(join(folder, 'misnamed.pid'))],
      // The server's own name, not the one the model sees (ev_echo).
      needs_approval: ['echo'],
      tool_task_queues: { 'ev_get-sum': 'elsewhere' },
    };
    const message =
      "agent 'misnamed': needs_approval lists echo, which is not among its tools or its MCP servers' tools (add, ev_echo, ev_get-sum)";
    const world = await startWorld({
      agents: [definition as AgentDefinitionInput],
      fake: { script: [reply('never')] },
    });
    const run = await world.client.start({ agent: 'misnamed', input: 'go' });
    const error = await run.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('UnknownAgentTool');
    expect((error as RunFailedError).message).toBe(
      `run ${run.workflow.workflowId} failed: resolving the agent failed: ${message}`,
    );
    expect(world.fake.requests).toHaveLength(0);
    // Not retried: listing again cannot help.
    const history = (await run.workflow.fetchHistory()).events ?? [];
    expect(
      history
        .filter((event) => event.activityTaskStartedEventAttributes)
        .map((event) => event.activityTaskStartedEventAttributes!.attempt),
    ).toEqual([1]);

    const agents = join(folder, 'misnamed.json');
    writeFileSync(agents, JSON.stringify([definition]));
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:9' };
    const json = await runCli(['mcp', 'tools', '--agents', agents, 'misnamed', '--json'], env);
    expect(json.code).toBe(1);
    const [listing] = (
      JSON.parse(json.stdout) as {
        agents: Array<{
          agent: string;
          servers: Array<{ server: string; tools: Array<{ name: string }> }>;
          error: unknown;
        }>;
      }
    ).agents;
    expect(listing!.servers.map((server) => [server.server, server.tools.map((tool) => tool.name)])).toEqual([
      ['everything', ['echo', 'get-sum'].map((name) => `ev_${name}`)],
    ]);
    expect(listing!.error).toEqual({ type: 'UnknownAgentTool', message });
    expect(JSON.parse(json.stderr)).toEqual({ error: { type: 'UnknownAgentTool', message } });
    const text = await runCli(['mcp', 'tools', '--agents', agents, 'misnamed'], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`\n  UnknownAgentTool: ${message}\n`);
    expect(text.stderr).toBe(`error: ${message}\n`);
  });
});
