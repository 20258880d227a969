import { mcpServerTools, mcpToolClash } from '../activities/describe-agent';
import { McpServers } from '../activities/mcp-servers';
import type { SecretRedactor } from '../activities/redact';
import type { AgentRegistry } from '../agents/registry';
import { FailureType } from '../common/failure-types';
import type { ToolDescriptor } from '../runtime';
import { workerRedactor } from './redaction';

/** A tool as the model sees it (its name, description and parameters), and where it comes from. */
export type ListedTool = Pick<ToolDescriptor, 'name' | 'description' | 'parameters' | 'mcp'>;
export type ServerListing =
  { server: string; tools: ListedTool[] } | { server: string; error: { type: FailureType; message: string } };
export interface AgentListing {
  agent: string;
  servers: ServerListing[];
  /** Why the listed tools cannot all be offered (a name given twice), as a run would fail. */
  error?: { type: FailureType; message: string };
}

/**
 * What a worker serving `registry` would offer the named agents from their MCP servers, listed the way a
 * run's start lists them (`mcpServerTools`, `mcpToolClash` of `describeAgent`): per server its tools or
 * why it failed (McpServerUnavailable). For `patchloop mcp tools`; every connection is closed after.
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

async function agentListing(
  registry: AgentRegistry,
  name: string,
  config: { model: string; modelWindows: Record<string, number> },
  mcp: McpServers,
  redactor: SecretRedactor,
): Promise<AgentListing> {
  const spec = registry.describe(name, config.model, config.modelWindows);
  const servers = await Promise.all(
    spec.mcp_servers.map(async (server): Promise<ServerListing> => {
      try {
        const tools = await mcpServerTools(server, mcp, spec.limits.tool_timeout_seconds);
        return {
          server: server.name,
          tools: tools.map(({ name, description, parameters, mcp }) => ({ name, description, parameters, mcp })),
        };
      } catch (error) {
        const message = redactor.redact(error instanceof Error ? error.message : String(error));
        return { server: server.name, error: { type: FailureType.McpServerUnavailable, message } };
      }
    }),
  );
  const clash = mcpToolClash(
    spec,
    servers.flatMap((server) => ('tools' in server ? server.tools : [])) as ToolDescriptor[],
  );
  return {
    agent: name,
    servers,
    ...(clash ? { error: { type: FailureType.McpServerUnavailable, message: clash } } : {}),
  };
}
