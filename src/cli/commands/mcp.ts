import { AgentRegistry } from '../../agents/registry';
import { FailureType } from '../../common/failure-types';
import { configFromEnvironment } from '../../config/environment';
import { exampleTools } from '../../tools/examples';
import { parseCommand } from '../arguments';
import { agentsFromFile } from '../agents-file';
import { CliError, UsageError } from '../errors';
import { MCP_SYNTAX } from '../syntax';
import { listAgentsMcpTools, type AgentListing } from '../../worker/mcp-listing';

/**
 * `patchloop mcp tools [--agents FILE] [agent]`: what each agent gets from its MCP servers, listed as a
 * run's start lists them (`worker/mcp-listing.ts`). No Temporal server.
 */
export async function mcpCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values, positionals } = parseCommand(args, MCP_SYNTAX);
  if (positionals['action'] !== 'tools')
    throw new UsageError(`unknown mcp action '${positionals['action']}'\nusage: ${MCP_SYNTAX.usage}`);
  const config = configFromEnvironment();
  const registry = new AgentRegistry(exampleTools, await agentsFromFile(values.agents));
  const known = registry.definitions.map((agent) => agent.name);
  const wanted = positionals['agent'];
  if (wanted !== undefined && !known.includes(wanted))
    throw new CliError(`unknown agent '${wanted}' (agents: ${known.join(', ')})`, FailureType.UnknownAgent);
  const listings = await listAgentsMcpTools(registry, wanted === undefined ? known : [wanted], config);
  if (values.json) print(JSON.stringify({ agents: listings }, null, 2));
  else for (const listing of listings) print(textOf(listing));
  const failed = listings.flatMap((listing) => [
    ...listing.servers.flatMap((server) => ('error' in server ? [server.error] : [])),
    ...(listing.error ? [listing.error] : []),
  ]);
  // The first failure's type: a server's (McpServerUnavailable), else the agent's (a run's start would fail so).
  if (failed.length > 0) throw new CliError(failed.map((error) => error.message).join('; '), failed[0]!.type);
  return undefined;
}

function textOf(listing: AgentListing): string {
  const lines = [`agent ${listing.agent}${listing.servers.length === 0 ? ': no MCP servers' : ''}`];
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
