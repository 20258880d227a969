import { z } from 'zod';
import { AgentRegistry } from '../../agents/registry';
import { FailureType } from '../../common/failure-types';
import { configFromEnvironment } from '../../config/environment';
import { isSelfRefTool, type AgentDefinitionInput } from '../../runtime';
import { defineTool, type Tool } from '../../tools/define-tool';
import { exampleTools } from '../../tools/examples';
import { parseCommand } from '../arguments';
import { agentsFromFile } from '../agents-file';
import { CliError, UsageError } from '../errors';
import { MCP_SYNTAX } from '../syntax';
import { listAgentsMcpTools, type AgentListing } from '../../worker/mcp-tools-report';

/**
 * `patchloop mcp tools [--agents FILE] [agent]`: what each agent gets from its MCP servers, listed as a
 * run's start lists them (`worker/mcp-tools-report.ts`). No Temporal server.
 */
export async function mcpCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values, positionals } = parseCommand(args, MCP_SYNTAX);
  if (positionals['action'] === 'serve') {
    const [{ withClient }, { mcpServeCommand }] = await Promise.all([
      import('../connect.js'),
      import('./mcp-serve.js'),
    ]);
    await withClient(mcpServeCommand, args, print);
    return undefined;
  }
  if (positionals['action'] !== 'tools')
    throw new UsageError(`unknown mcp action '${positionals['action']}'\nusage: ${MCP_SYNTAX.usage}`);
  const config = configFromEnvironment();
  const agents = await agentsFromFile(values.agents);
  const unloaded = unloadedToolNames(agents);
  const registry = new AgentRegistry([...exampleTools, ...unloaded.map(unloadedTool)], agents);
  const known = registry.definitions.map((agent) => agent.name);
  const wanted = positionals['agent'];
  if (wanted !== undefined && !known.includes(wanted))
    throw new CliError(`unknown agent '${wanted}' (agents: ${known.join(', ')})`, FailureType.UnknownAgent);
  const listings = await listAgentsMcpTools(registry, wanted === undefined ? known : [wanted], config);
  if (values.json) print(JSON.stringify({ agents: listings }, null, 2));
  else for (const listing of listings) print(textOf(listing, registry.definitions, unloaded));
  const failed = listings.flatMap((listing) => [
    ...listing.servers.flatMap((server) => ('error' in server ? [server.error] : [])),
    ...(listing.error ? [listing.error] : []),
  ]);
  // The first failure's type: a server's (McpServerUnavailable), else the agent's (a run's start would fail so).
  if (failed.length > 0) throw new CliError(failed.map((error) => error.message).join('; '), failed[0]!.type);
  return undefined;
}

/**
 * The tools the agents name that are neither the example tools nor SelfRef's: a worker's own, from its
 * `--tools` modules, which this command does not load. Their names are taken as given (MCP names must
 * still not clash with them, and `needs_approval` may name them); the worker checks them when it starts.
 */
function unloadedToolNames(agents: readonly AgentDefinitionInput[]): string[] {
  const known = new Set(exampleTools.map((tool) => tool.name));
  const named = agents.flatMap((agent) => agent.tools ?? []);
  return [...new Set(named)].filter((name) => !known.has(name) && !isSelfRefTool(name));
}

/** A stand-in for a tool this command does not load: its name only (it never runs here). */
function unloadedTool(name: string): Tool {
  return defineTool({
    name,
    description: 'a tool of the worker, not loaded by patchloop mcp tools',
    parameters: z.object({}),
    execute: () => {
      throw new Error(`tool '${name}' is not loaded by patchloop mcp tools`);
    },
  });
}

function textOf(listing: AgentListing, agents: readonly AgentDefinitionInput[], unloaded: readonly string[]): string {
  const lines = [`agent ${listing.agent}${listing.servers.length === 0 ? ': no MCP servers' : ''}`];
  const own = agents.find((agent) => agent.name === listing.agent)?.tools?.filter((name) => unloaded.includes(name));
  if (own && own.length > 0) lines.push(`  its own tools (a worker's --tools, not checked here): ${own.join(', ')}`);
  for (const server of listing.servers) {
    if ('error' in server) {
      lines.push(`  server ${server.server}: ${server.error.type}: ${server.error.message}`);
      continue;
    }
    lines.push(`  server ${server.server}: ${server.tools.length} tool(s)`);
    for (const tool of server.tools) {
      lines.push(`    ${tool.name}: ${tool.description.split('\n')[0]}`);
      lines.push(`      parameters: ${parametersOf(tool.parameters)}`);
      lines.push(
        `      interrupted by a crash: ${tool.mcp?.repeatable ? 'sent again (read-only or idempotent)' : 'not sent again (the model is told it may or may not have taken effect)'}`,
      );
    }
  }
  if (listing.error) lines.push(`  ${listing.error.type}: ${listing.error.message}`);
  return lines.join('\n');
}

/** `name (type, required), ...` from a JSON schema's properties. */
function parametersOf(schema: Record<string, unknown>): string {
  const properties = (schema['properties'] ?? {}) as Record<string, { type?: unknown }>;
  const required = Array.isArray(schema['required']) ? (schema['required'] as unknown[]) : [];
  const names = Object.keys(properties);
  if (names.length === 0) return 'none';
  return names
    .map((name) => {
      const type = properties[name]?.type;
      const kind = Array.isArray(type) ? type.join('|') : typeof type === 'string' ? type : 'any';
      return `${name} (${kind}${required.includes(name) ? ', required' : ''})`;
    })
    .join(', ');
}
