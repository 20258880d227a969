import type { AgentRegistry } from '../agents/registry';
import type { AgentSpec } from '../runtime';
import { mcpServerTools } from './describe-agent';
import type { McpServers } from './mcp-servers';

/** A run's agent after its MCP servers were asked again; `problem` when it keeps the tools it had. */
export interface RelistedAgent {
  agent: AgentSpec;
  problem?: string;
}

/**
 * At continue-as-new: the agent's MCP tools listed anew (the servers may offer new tools, drop some, or
 * describe them differently), gated and routed as the agent says. Recorded like the first list, so
 * replays of the new run see the same. A server that cannot list, or a list the agent cannot offer, keeps
 * the run on the tools it had, with the reason: a long run does not end because a server hiccupped at
 * one boundary.
 */
export function createRelistMcpTools(registry: AgentRegistry, mcp: McpServers) {
  return async function relistMcpTools(agent: AgentSpec): Promise<RelistedAgent> {
    if (agent.mcp_servers.length === 0) return { agent };
    try {
      const lists = await Promise.all(
        agent.mcp_servers.map((server) => mcpServerTools(server, mcp, agent.limits.tool_timeout_seconds)),
      );
      return { agent: registry.withMcpTools(withoutMcpTools(agent), lists.flat()) };
    } catch (error) {
      return { agent, problem: error instanceof Error ? error.message : String(error) };
    }
  };
}

/** The spec as `registry.describe` would give it: the MCP tools, and the gates and routes of them, left out. */
export function withoutMcpTools(agent: AgentSpec): AgentSpec {
  const mcpNames = new Set(agent.tool_descriptors.filter((tool) => tool.mcp).map((tool) => tool.name));
  return {
    ...agent,
    tools: agent.tools.filter((name) => !mcpNames.has(name)),
    tool_descriptors: agent.tool_descriptors.filter((tool) => !mcpNames.has(tool.name)),
    needs_approval: agent.needs_approval.filter((name) => !mcpNames.has(name)),
    tool_task_queues: Object.fromEntries(
      Object.entries(agent.tool_task_queues).filter(([name]) => !mcpNames.has(name)),
    ),
  };
}
