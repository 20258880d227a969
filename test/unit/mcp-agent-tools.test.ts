import { ApplicationFailure, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDescribeAgent } from '../../src/activities/describe-agent';
import type { McpServers, McpToolListing } from '../../src/activities/mcp-connections';
import { mcpDescriptors } from '../../src/activities/mcp-tool-listing';
import { createReviewToolCalls } from '../../src/activities/tool-review';
import { AgentRegistry } from '../../src/agents/registry';
import {
  ConfigurationError,
  ownToolNames,
  withMcpGrant,
  withoutMcpTools,
  type AgentDefinitionInput,
  type AgentSpec,
  type McpServerConfig,
} from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';

const deploy = defineTool({
  name: 'deploy',
  description: 'deploys',
  parameters: z.object({ env: z.string() }),
  taskQueue: 'ops',
  execute: () => 'deployed',
});

/** What the server lists (as server-everything names them); the agent sees them prefixed `ev_`. */
const listing: McpToolListing[] = [
  { name: 'echo', description: 'Echoes', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
  { name: 'get-sum', description: 'Adds', inputSchema: { type: 'object' } },
];
const server = { name: 'everything', command: 'node', tool_prefix: 'ev.' };

function mcpAgent(extra: Partial<AgentDefinitionInput> = {}): AgentDefinitionInput {
  return { name: 'mcp-user', instructions: '', tools: ['add', 'deploy'], mcp_servers: [server], ...extra };
}

function registryWith(agent: AgentDefinitionInput): AgentRegistry {
  return new AgentRegistry([addTool, deploy], [agent]);
}

/** The descriptors a run's start lists from `listing` for the agent's server. */
function listed(registry: AgentRegistry): ReturnType<typeof mcpDescriptors> {
  return mcpDescriptors(registry.mcpServer('mcp-user', 'everything') as McpServerConfig, listing, 60);
}

/** An activity environment that does not log the failures these tests expect. */
function activityEnvironment(): MockActivityEnvironment {
  const quiet = () => undefined;
  const logger: Logger = { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet };
  return new MockActivityEnvironment({}, { logger });
}

/** The failure `fn` throws (it must throw one). */
function thrownBy(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }
  throw new Error('nothing was thrown');
}

describe('needs_approval and tool_task_queues naming MCP tools', () => {
  it('still refuses unknown names at worker start for an agent without MCP servers', () => {
    expect(
      () =>
        new AgentRegistry(
          [addTool],
          [{ name: 'a', instructions: '', tools: ['add'], needs_approval: ['ev_echo'], tool_task_queues: { x: 'q' } }],
        ),
    ).toThrow(
      new ConfigurationError(
        "agent 'a': needs_approval lists ev_echo, which is not among its tools (add); tool_task_queues names x, not among its tools (add)",
      ),
    );
  });

  it('accepts MCP names at worker start for an agent with MCP servers; the recorded spec gates and routes them', () => {
    const registry = registryWith(
      mcpAgent({ needs_approval: ['ev_echo', 'add'], tool_task_queues: { 'ev_get-sum': 'mcp-queue', add: 'adders' } }),
    );
    const described = registry.describe('mcp-user', 'm');
    // Before listing: the registered tools only.
    expect(described.needs_approval).toEqual(['add']);
    expect(described.tool_task_queues).toEqual({ add: 'adders', deploy: 'ops' });
    const spec = registry.withMcpTools(described, listed(registry));
    expect(spec.tools).toEqual(['add', 'deploy', 'ev_echo', 'ev_get-sum']);
    expect(spec.tool_descriptors.map((tool) => [tool.name, tool.mcp])).toEqual([
      ['add', undefined],
      ['deploy', undefined],
      ['ev_echo', { server: 'everything', tool: 'echo', repeatable: false, idle_seconds: 60, total_seconds: 600 }],
      [
        'ev_get-sum',
        { server: 'everything', tool: 'get-sum', repeatable: false, idle_seconds: 60, total_seconds: 600 },
      ],
    ]);
    expect(spec.needs_approval).toEqual(['add', 'ev_echo']);
    expect(spec.tool_task_queues).toEqual({ add: 'adders', deploy: 'ops', 'ev_get-sum': 'mcp-queue' });
  });

  it("a new grant replaces the MCP tools, their gates and routes, and keeps the agent's own (continue-as-new)", () => {
    const registry = registryWith(
      mcpAgent({ needs_approval: ['ev_echo', 'add'], tool_task_queues: { 'ev_get-sum': 'mcp-queue', add: 'adders' } }),
    );
    const spec = registry.withMcpTools(registry.describe('mcp-user', 'm'), listed(registry));
    // The round trip: without the MCP tools it is the spec before listing.
    expect(withoutMcpTools(spec)).toEqual(registry.describe('mcp-user', 'm'));
    // The server now lists get-sum only: echo goes, the agent's own tools, gates and routes stay.
    const ungated = registryWith(mcpAgent({ tool_task_queues: { 'ev_get-sum': 'mcp-queue', add: 'adders' } }));
    const before = ungated.withMcpTools(ungated.describe('mcp-user', 'm'), listed(ungated));
    const next = withMcpGrant(before, ungated.mcpGrant('mcp-user', ownToolNames(before), listed(ungated).slice(1)));
    expect(next.tools).toEqual(['add', 'deploy', 'ev_get-sum']);
    expect(next.tool_descriptors.map((tool) => tool.name)).toEqual(['add', 'deploy', 'ev_get-sum']);
    expect(next.tool_task_queues).toEqual({ add: 'adders', deploy: 'ops', 'ev_get-sum': 'mcp-queue' });
    // A gated tool that went away is refused (UnknownAgentTool): a run keeps the tools it had, gate included.
    expect(() => registry.mcpGrant('mcp-user', ownToolNames(spec), listed(registry).slice(1))).toThrow(
      /needs_approval lists ev_echo, which is not among its tools or its MCP servers' tools/,
    );
    // A list that clashes with the agent's own tools is refused, not joined.
    const clashing = { ...listed(registry)[0]!, name: 'add' };
    expect(() => registry.mcpGrant('mcp-user', ownToolNames(spec), [clashing])).toThrow(
      /tool name\(s\) add given twice/,
    );
  });

  it('refuses a list too large for the run to carry, naming the allow-list as the way out', () => {
    const registry = registryWith(mcpAgent());
    const huge = Array.from({ length: 600 }, (_, index) => ({
      ...listed(registry)[0]!,
      name: `ev_tool_${index}`,
      description: 'x'.repeat(1000),
    }));
    expect(() => registry.mcpGrant('mcp-user', ['add', 'deploy'], huge)).toThrow(
      /its MCP servers list 600 tools in \d+ bytes, over 524288: narrow them with each server's "tools" allow-list/,
    );
  });

  it('fails a run at its start when a name is neither a registered tool of the agent nor one its servers listed', () => {
    // The server's own name (echo) is not the name the model sees (ev_echo).
    const registry = registryWith(
      mcpAgent({ needs_approval: ['echo'], tool_task_queues: { 'ev_get-sum': 'q', sum: 'q' } }),
    );
    const error = thrownBy(() => registry.withMcpTools(registry.describe('mcp-user', 'm'), listed(registry)));
    expect(error.type).toBe('UnknownAgentTool');
    expect(error.nonRetryable).toBe(true);
    expect(error.message).toBe(
      "agent 'mcp-user': needs_approval lists echo, which is not among its tools or its MCP servers' tools (add, deploy, ev_echo, ev_get-sum); " +
        "tool_task_queues names sum, not among its tools or its MCP servers' tools (add, deploy, ev_echo, ev_get-sum)",
    );
  });

  it('a name given twice stays McpServerUnavailable, checked before the names', () => {
    const registry = registryWith(
      mcpAgent({ tools: ['add'], needs_approval: ['nope'], mcp_servers: [{ ...server, tool_prefix: '' }] }),
    );
    const tools = [...listed(registry), { ...listed(registry)[0]!, name: 'add' }];
    const error = thrownBy(() => registry.withMcpTools(registry.describe('mcp-user', 'm'), tools));
    expect(error.type).toBe('McpServerUnavailable');
    expect(error.message).toBe("agent 'mcp-user': tool name(s) add given twice (set a tool_prefix per MCP server)");
  });

  it('describeAgent fails the run at once (no retry) with the same error, after listing the servers', async () => {
    const registry = registryWith(mcpAgent({ needs_approval: ['ev_echoo'] }));
    const lists: string[] = [];
    const mcp = {
      listTools: (config: McpServerConfig) => {
        lists.push(config.name);
        return Promise.resolve(listing);
      },
    } as unknown as McpServers;
    const { describeAgent } = createDescribeAgent(
      registry,
      'm',
      { payloadsByReference: false, searchAttributes: () => Promise.resolve(false) },
      mcp,
    );
    const error = (await activityEnvironment()
      .run(describeAgent, 'mcp-user')
      .catch((caught: unknown) => caught)) as ApplicationFailure;
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error.type).toBe('UnknownAgentTool');
    expect(error.nonRetryable).toBe(true);
    expect(error.message).toBe(
      "agent 'mcp-user': needs_approval lists ev_echoo, which is not among its tools or its MCP servers' tools (add, deploy, ev_echo, ev_get-sum)",
    );
    expect(lists).toEqual(['everything']);

    const accepted = registryWith(mcpAgent({ needs_approval: ['ev_echo'] }));
    const spec: AgentSpec = await activityEnvironment().run(
      createDescribeAgent(
        accepted,
        'm',
        { payloadsByReference: false, searchAttributes: () => Promise.resolve(false) },
        mcp,
      ).describeAgent,
      'mcp-user',
    );
    expect(spec.needs_approval).toEqual(['ev_echo']);
    expect(spec.tools).toEqual(['add', 'deploy', 'ev_echo', 'ev_get-sum']);
  });

  it('a tools-only worker counts MCP tools routed to its queue', () => {
    const registry = registryWith(mcpAgent({ tool_task_queues: { ev_echo: 'mcp-queue' } }));
    expect(registry.routedTo('mcp-queue')).toEqual(['mcp-user/ev_echo']);
    expect(registry.routedTo('ops')).toEqual(['mcp-user/deploy']);
    expect(registry.routedTo('nobody')).toEqual([]);
  });
});

describe('reviewing a gated MCP call', () => {
  const registry = registryWith(mcpAgent({ needs_approval: ['ev_echo', 'deploy'] }));
  const review = (calls: Array<{ id: string; name: string; arguments: string }>) =>
    activityEnvironment().run(createReviewToolCalls(registry), {
      agent: 'mcp-user',
      iteration: 1,
      calls,
      run_chain_id: 'chain',
    });

  it('puts the call to a person with its arguments repaired to a JSON object', async () => {
    expect(
      await review([
        { id: 'a', name: 'ev_echo', arguments: '{"message": "hi"' },
        { id: 'b', name: 'deploy', arguments: '{"env": "prod"}' },
      ]),
    ).toEqual([
      { tool_call_id: 'a', needs_approval: true, arguments: { message: 'hi' } },
      { tool_call_id: 'b', needs_approval: true, arguments: { env: 'prod' } },
    ]);
  });

  it('does not put a call whose arguments do not parse, nor a tool the agent does not gate', async () => {
    expect(
      await review([
        { id: 'a', name: 'ev_echo', arguments: '[1, 2]' },
        { id: 'b', name: 'ev_echo', arguments: 'not json' },
        { id: 'c', name: 'ev_get-sum', arguments: '{"a": 1, "b": 2}' },
      ]),
    ).toEqual([
      { tool_call_id: 'a', needs_approval: false, arguments: null },
      { tool_call_id: 'b', needs_approval: false, arguments: null },
      { tool_call_id: 'c', needs_approval: false, arguments: null },
    ]);
  });
});
