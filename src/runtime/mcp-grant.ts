import type { AgentSpec, McpServerConfig, ToolDescriptor } from './agent';

/**
 * What an agent's MCP servers give a run: their configuration as the worker has it, the tools they
 * listed (as the model sees them), and which of those the agent gates or routes. A run's start and each
 * continue-as-new record one; `withMcpGrant` puts it into the run's spec.
 */
export interface McpGrant {
  mcp_servers: McpServerConfig[];
  tools: ToolDescriptor[];
  needs_approval: string[];
  tool_task_queues: Record<string, string>;
}

/** The spec without its MCP tools, their gates and their routes: the agent's own tools only. */
export function withoutMcpTools(spec: AgentSpec): AgentSpec {
  const mcp = new Set(spec.tool_descriptors.filter((tool) => tool.mcp).map((tool) => tool.name));
  return {
    ...spec,
    tools: spec.tools.filter((name) => !mcp.has(name)),
    tool_descriptors: spec.tool_descriptors.filter((tool) => !mcp.has(tool.name)),
    needs_approval: spec.needs_approval.filter((name) => !mcp.has(name)),
    tool_task_queues: Object.fromEntries(Object.entries(spec.tool_task_queues).filter(([name]) => !mcp.has(name))),
  };
}

/** The spec with these MCP tools instead of the ones it had (its own tools, gates and routes kept). */
export function withMcpGrant(spec: AgentSpec, grant: McpGrant): AgentSpec {
  const own = withoutMcpTools(spec);
  return {
    ...own,
    mcp_servers: grant.mcp_servers,
    tools: [...own.tools, ...grant.tools.map((tool) => tool.name)],
    tool_descriptors: [...own.tool_descriptors, ...grant.tools],
    needs_approval: [...own.needs_approval, ...grant.needs_approval],
    tool_task_queues: { ...own.tool_task_queues, ...grant.tool_task_queues },
  };
}

/** The agent's own (not MCP) tool names: what MCP tool names must not clash with. */
export function ownToolNames(spec: AgentSpec): string[] {
  return spec.tool_descriptors.filter((tool) => !tool.mcp).map((tool) => tool.name);
}
