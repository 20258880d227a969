import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { RunFailedError } from '../../src/client/patchloop-client';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import {
  filesystemServerBin,
  listServerTools,
  offeredTools,
  pythonMcpScript,
  pythonMcpServer,
  pythonWithMcp,
  toolMessages,
} from '../../support/mcp-servers';
import { eventually } from '../support/wait';

function agent(servers: unknown[]): AgentDefinitionInput {
  return { name: 'mcp-user', instructions: 'Use the tools.', mcp_servers: servers } as AgentDefinitionInput;
}

describe('real MCP servers', () => {
  it('@modelcontextprotocol/server-filesystem over stdio: writes a file, reads it back, and refuses a path outside its directory', async ({
    startWorld,
  }) => {
    const bin = filesystemServerBin();
    const allowed = realpathSync(mkdtempSync(join(tmpdir(), 'patchloop-mcpfs-')));
    const outside = join(realpathSync(mkdtempSync(join(tmpdir(), 'patchloop-mcpfs-outside-'))), 'secret.txt');
    const file = join(allowed, 'notes', 'hello.txt');
    const content = 'Hello from the agent.\nSecond line: ünïcødé ✓';
    const listing = await listServerTools(process.execPath, [bin, allowed]);
    const world = await startWorld({
      agents: [
        agent([
          {
            name: 'files',
            command: process.execPath,
            args: [bin, allowed],
            tools: ['create_directory', 'write_file', 'read_text_file'],
            tool_prefix: 'fs_',
          },
        ]),
      ],
      fake: {
        script: [
          callTools([{ id: 'd1', name: 'fs_create_directory', arguments: JSON.stringify({ path: dirname(file) }) }]),
          callTools([{ id: 'w1', name: 'fs_write_file', arguments: JSON.stringify({ path: file, content }) }]),
          callTools([
            { id: 'r1', name: 'fs_read_text_file', arguments: JSON.stringify({ path: file }) },
            { id: 'x1', name: 'fs_write_file', arguments: JSON.stringify({ path: outside, content: 'nope' }) },
            { id: 'x2', name: 'fs_read_text_file', arguments: JSON.stringify({ path: '/etc/hostname' }) },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const result = await run.result();
    expect(result.status).toBe('completed');

    // Offered: the allowed tools in the server's order, prefixed, with its own descriptions and input schemas.
    const allowedTools = ['create_directory', 'write_file', 'read_text_file'];
    expect(offeredTools(world.fake.requests[0]!.body).map((tool) => tool.function)).toEqual(
      listing
        .filter((tool) => allowedTools.includes(tool.name))
        .map((tool) => ({ name: `fs_${tool.name}`, description: tool.description, parameters: tool.inputSchema })),
    );
    expect(offeredTools(world.fake.requests[0]!.body).map((tool) => tool.function.name)).toEqual([
      'fs_read_text_file',
      'fs_write_file',
      'fs_create_directory',
    ]);
    expect(
      offeredTools(world.fake.requests[0]!.body).find((tool) => tool.function.name === 'fs_write_file')!.function
        .parameters,
    ).toMatchObject({
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    });

    // The results the model receives: the server's text, then its structured content as JSON text (the
    // server puts the same words in both: its text is not the structured content serialized).
    const both = (text: string) => `${text}\n${JSON.stringify({ content: text })}`;
    expect(toolMessages(world.fake.requests[1]!.body)).toEqual([
      { role: 'tool', tool_call_id: 'd1', content: both(`Successfully created directory ${dirname(file)}`) },
    ]);
    expect(toolMessages(world.fake.requests[2]!.body)[1]).toEqual({
      role: 'tool',
      tool_call_id: 'w1',
      content: both(`Successfully wrote to ${file}`),
    });
    const third = toolMessages(world.fake.requests[3]!.body).slice(2);
    expect(third[0]).toEqual({ role: 'tool', tool_call_id: 'r1', content: both(content) });
    // The refused paths: isError results, as the tool's error, naming the refusal.
    expect(third.slice(1)).toEqual([
      {
        role: 'tool',
        tool_call_id: 'x1',
        content: JSON.stringify(
          {
            error: `Tool 'fs_write_file' failed during execution or result parsing with arguments ${JSON.stringify({ path: outside, content: 'nope' })}: Access denied - path outside allowed directories: ${outside} not in ${allowed}`,
          },
          null,
          2,
        ),
      },
      {
        role: 'tool',
        tool_call_id: 'x2',
        content: JSON.stringify(
          {
            error: `Tool 'fs_read_text_file' failed during execution or result parsing with arguments ${JSON.stringify({ path: '/etc/hostname' })}: Access denied - path outside allowed directories: /etc/hostname not in ${allowed}`,
          },
          null,
          2,
        ),
      },
    ]);
    expect(world.fake.requests).toHaveLength(4);

    // The file is really on disk, and nothing was written outside.
    expect(readFileSync(file, 'utf8')).toBe(content);
    expect(existsSync(outside)).toBe(false);
  });

  it("a server written with Python's mcp package (FastMCP) over stdio: its tools and schemas offered, a number, structured content, and text with structured content received", async ({
    startWorld,
  }) => {
    const command = pythonWithMcp();
    const listing = await listServerTools(command, [pythonMcpScript]);
    expect(listing.map((tool) => tool.name)).toEqual([
      'multiply',
      'rectangle',
      'forecast',
      'append_line',
      'count_lines',
      'wait_for',
      'pay',
      'quote',
      'transfer',
    ]);
    const world = await startWorld({
      // The allow-list: the other tools of the server are never offered.
      agents: [
        agent([{ name: 'python', command, args: [pythonMcpScript], tools: ['multiply', 'rectangle', 'forecast'] }]),
      ],
      fake: {
        script: [
          callTools([
            { id: 'm1', name: 'multiply', arguments: '{"a": 6, "b": 7}' },
            { id: 'm2', name: 'multiply', arguments: '{"a": 2.5, "b": -0.5}' },
            { id: 's1', name: 'rectangle', arguments: '{"width": 3, "height": 4.5}' },
            { id: 'e1', name: 'multiply', arguments: '{"a": "six"}' },
            { id: 'f1', name: 'forecast', arguments: '{"city": "Paris"}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const result = await run.result();
    expect(result.status).toBe('completed');

    // Offered exactly as the server lists them (FastMCP derives the schemas from the type hints).
    expect(offeredTools(world.fake.requests[0]!.body)).toEqual([
      {
        type: 'function',
        function: {
          name: 'multiply',
          description: 'Multiplies two numbers.',
          parameters: {
            type: 'object',
            properties: { a: { title: 'A', type: 'number' }, b: { title: 'B', type: 'number' } },
            required: ['a', 'b'],
            title: 'multiplyArguments',
          },
        },
      },
      {
        type: 'function',
        function: {
          name: 'rectangle',
          description: 'Describes a rectangle: its sides and its area, as structured content.',
          parameters: {
            type: 'object',
            properties: { width: { title: 'Width', type: 'number' }, height: { title: 'Height', type: 'number' } },
            required: ['width', 'height'],
            title: 'rectangleArguments',
          },
        },
      },
      {
        type: 'function',
        function: {
          name: 'forecast',
          description: 'A weather forecast: a sentence to read, and its figures as structured content.',
          parameters: {
            type: 'object',
            properties: { city: { title: 'City', type: 'string' } },
            required: ['city'],
            title: 'forecastArguments',
          },
        },
      },
    ]);

    const tools = toolMessages(world.fake.requests[1]!.body);
    expect(tools.slice(0, 3)).toEqual([
      { role: 'tool', tool_call_id: 'm1', content: '42.0' },
      { role: 'tool', tool_call_id: 'm2', content: '-1.25' },
      // Structured content as JSON text, once: FastMCP's text part is that content serialized.
      { role: 'tool', tool_call_id: 's1', content: '{"width":3,"height":4.5,"area":13.5}' },
    ]);
    // A text part that says something else reaches the model too: the text, then the structured content.
    expect(tools[4]).toEqual({
      role: 'tool',
      tool_call_id: 'f1',
      content: 'Sunny in Paris all day, 21 °C.\n{"city":"Paris","sky":"sunny","celsius":21}',
    });
    // Arguments the server's validation refuses: its isError result, as the tool's error.
    expect(tools[3]).toMatchObject({ role: 'tool', tool_call_id: 'e1' });
    const error = JSON.parse(String(tools[3]!.content)) as { error: string };
    expect(error.error).toMatch(
      /^Tool 'multiply' failed during execution or result parsing with arguments \{"a": "six"\}: Error executing tool multiply: /,
    );
    expect(error.error).toMatch(/validation error/);
  });

  it('a server that takes 12 s to start: the run waits for it (start_timeout_seconds, 60 s by default), heartbeating, and calls its tool', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [agent([pythonMcpServer({ tools: ['multiply'], env: { PY_MCP_START_DELAY: '12' } })])],
      fake: {
        script: [callTools([{ id: 'm1', name: 'multiply', arguments: '{"a": 6, "b": 7}' }]), reply('done')],
      },
    });
    const started = Date.now();
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    // The first model call came after the start: the listing waited for it.
    expect(world.fake.requests[0]!.receivedAt - started).toBeGreaterThanOrEqual(12_000);
    expect(offeredTools(world.fake.requests[0]!.body).map((tool) => tool.function.name)).toEqual(['multiply']);
    expect(toolMessages(world.fake.requests[1]!.body)).toEqual([{ role: 'tool', tool_call_id: 'm1', content: '42.0' }]);
    // One attempt of describeAgent did it (heartbeating meanwhile: its heartbeat timeout is 5 s).
    expect(describeAgentAttempts(await run.workflow.fetchHistory())).toEqual([1]);
  });

  it('a server that does not start within its start_timeout_seconds fails the run at once, naming the server, the limit and its last stderr lines; its process is stopped', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      // Long enough for Python to start and say so on a loaded machine (under a load of 8 it took over 3 s).
      agents: [agent([pythonMcpServer({ start_timeout_seconds: 15, env: { PY_MCP_START_DELAY: '3600' } })])],
      fake: { script: [reply('never')] },
    });
    const started = Date.now();
    const run = await world.client.start({ agent: 'mcp-user', input: 'go' });
    const error = await run.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('McpServerUnavailable');
    const message = (error as RunFailedError).causeMessage;
    expect(message).toMatch(
      /^resolving the agent failed: MCP server 'python' did not start within its start_timeout_seconds, 15 s \(stderr: python-tools: warming up for 3600 s \| python-tools: pid \d+\)$/,
    );
    // Not tried again: another attempt would wait as long, and fail the same way.
    expect(describeAgentAttempts(await run.workflow.fetchHistory())).toEqual([1]);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(world.fake.requests).toHaveLength(0);
    // The process that did not start was stopped, not left waiting.
    const pid = Number(/pid (\d+)/.exec(message)![1]);
    await eventually(() => (alive(pid) ? undefined : true), 15_000, `server process ${pid} to exit`);
  });
});

/** The attempts of describeAgent that history records as started (a retried activity records its last one). */
function describeAgentAttempts(history: unknown): number[] {
  const events = (history as { events?: Array<Record<string, unknown>> }).events ?? [];
  const scheduled = new Map<string, string>();
  const attempts: number[] = [];
  for (const event of events) {
    const schedule = event['activityTaskScheduledEventAttributes'] as { activityType?: { name?: string } } | undefined;
    if (schedule) scheduled.set(String(event['eventId']), schedule.activityType?.name ?? '');
    const start = event['activityTaskStartedEventAttributes'] as
      { scheduledEventId?: unknown; attempt?: number } | undefined;
    if (start && scheduled.get(String(start.scheduledEventId)) === 'describeAgent') attempts.push(start.attempt ?? 0);
  }
  return attempts;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
