import { ApplicationFailure } from '@temporalio/common';
import { McpServers } from '../activities/mcp-connections';
import { mcpServerTools } from '../activities/mcp-tool-listing';
import type { SecretRedactor } from '../activities/redact';
import type { AgentRegistry } from '../agents/registry';
import { FailureType } from '../common/failure-types';
import { mcpToolClash, ownToolNames, type AgentSpec, type ToolDescriptor } from '../runtime';
import { workerRedactor } from './redaction';

/** A tool as the model sees it (its name, description and parameters), and where it comes from. */
type ListedTool = Pick<ToolDescriptor, 'name' | 'description' | 'parameters' | 'mcp'>;
type ServerListing =
  { server: string; tools: ListedTool[] } | { server: string; error: { type: FailureType; message: string } };
export interface AgentListing {
  agent: string;
  servers: ServerListing[];
  /**
   * Why the agent cannot be served with the listed tools, as a run would fail: a name given twice
   * (McpServerUnavailable), or `needs_approval` / `tool_task_queues` naming a tool it does not have
   * (UnknownAgentTool, checked when every server listed its tools).
   */
  error?: { type: FailureType; message: string };
}

/**
 * What a worker serving `registry` would offer the named agents from their MCP servers, listed and
 * checked the way a run's start does (`mcpServerTools`, `registry.withMcpTools`): per
 * server its tools or why it failed (McpServerUnavailable), and why the agent would fail with them. For
 * `patchloop mcp tools`; every connection is closed after.
 */
export async function listAgentsMcpTools(
  registry: AgentRegistry,
  names: readonly string[],
  config: { model: string; modelWindows: Record<string, number> },
  environment: NodeJS.ProcessEnv = process.env,
): Promise<AgentListing[]> {
  const mcp = new McpServers(environment);
  // A server's error may quote what it was given (its stderr): the worker's secrets are removed, as in a run.
  const redactor = workerRedactor({ openaiApiKey: undefined }, registry.definitions, environment);
  try {
    return await Promise.all(names.map((name) => agentListing(registry, name, config, mcp, redactor)));
  } finally {
    await mcp.close();
  }
}

/** A server's tools as a run records them, or why it could not list them. */
type ServerTools =
  { server: string; tools: ToolDescriptor[] } | { server: string; error: { type: FailureType; message: string } };

async function agentListing(
  registry: AgentRegistry,
  name: string,
  config: { model: string; modelWindows: Record<string, number> },
  mcp: McpServers,
  redactor: SecretRedactor,
): Promise<AgentListing> {
  const spec = registry.describe(name, config.model, config.modelWindows);
  const lists = await Promise.all(
    spec.mcp_servers.map(async (server): Promise<ServerTools> => {
      try {
        return { server: server.name, tools: await mcpServerTools(server, mcp, spec.limits.tool_timeout_seconds) };
      } catch (error) {
        const message = redactor.redact(error instanceof Error ? error.message : String(error));
        return { server: server.name, error: { type: FailureType.McpServerUnavailable, message } };
      }
    }),
  );
  const servers = lists.map((list): ServerListing =>
    'error' in list
      ? list
      : {
          server: list.server,
          tools: list.tools.map(({ name, description, parameters, mcp }) => ({ name, description, parameters, mcp })),
        },
  );
  const listed = lists.flatMap((list) => ('tools' in list ? list.tools : []));
  const error = agentProblem(registry, spec, listed, lists.filter((list) => 'error' in list).length);
  return { agent: name, servers, ...(error ? { error } : {}) };
}

/**
 * Why a run of the agent would fail with these listings: with every server listed, exactly the check of
 * a run's start (`registry.withMcpTools`); with some failed, only names given twice among the others
 * (what it gates or routes may be the failed servers' tools).
 */
function agentProblem(
  registry: AgentRegistry,
  spec: AgentSpec,
  tools: readonly ToolDescriptor[],
  failedServers: number,
): { type: FailureType; message: string } | undefined {
  if (failedServers > 0) {
    const clash = mcpToolClash(spec.name, [...ownToolNames(spec), ...tools.map((tool) => tool.name)]);
    return clash ? { type: FailureType.McpServerUnavailable, message: clash } : undefined;
  }
  try {
    registry.withMcpTools(spec, tools);
    return undefined;
  } catch (error) {
    if (error instanceof ApplicationFailure && error.type)
      return { type: error.type as FailureType, message: error.message };
    throw error;
  }
}
