import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { PatchloopClient } from '../../client/patchloop-client';
import { configFromEnvironment } from '../../config/environment';
import { agentsMcpServer } from '../../gateway/mcp/agents-server';
import { PrincipalRuns } from '../../gateway/principal-runs';
import { PrincipalName } from '../../runtime';
import { ensureSearchAttributes } from '../../worker/search-attributes';
import { agentsFromFile } from '../agents-file';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { untilInterrupted } from '../interrupt';
import { MCP_SYNTAX } from '../syntax';

/**
 * `patchloop mcp serve --stdio`: the agents as an MCP server on standard input and output, for a local
 * client (an IDE, a desktop app) that starts it (docs/mcp-server.md). The runs are the principal's
 * (`--principal`, `local` by default), as the gateway's are a key's. Until the client closes stdin or
 * Ctrl-C; nothing but the protocol is written to stdout.
 */
export async function mcpServeCommand(client: PatchloopClient, args: string[]): Promise<undefined> {
  const { values } = parseCommand(args, MCP_SYNTAX);
  if (!values.stdio)
    throw new UsageError(
      `mcp serve needs --stdio (over HTTP, patchloop serve answers at /mcp)\nusage: ${MCP_SYNTAX.usage}`,
    );
  const name = PrincipalName.safeParse(values.principal ?? 'local');
  if (!name.success) throw new UsageError(`--principal ${JSON.stringify(values.principal)} is not a principal name`);
  const agents = await agentsFromFile(values.agents);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const attributes = await ensureSearchAttributes(client.temporal.connection, configFromEnvironment().namespace, {
    info: log,
    warn: log,
  });
  if (!attributes.available) throw new Error('the runs record who started them in PatchloopPrincipal (above)');
  const server = agentsMcpServer({
    principal: { name: name.data, admin: false },
    runs: new PrincipalRuns(client),
    agents: new Map(agents.map((agent) => [agent.name, agent])),
  });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const closed = new Promise<void>((resolve) => {
    const closing = server.onclose;
    server.onclose = () => (closing?.(), resolve());
  });
  process.stdin.once('end', () => void transport.close());
  log(
    `patchloop MCP server on stdio (principal ${name.data}; agents: ${agents.map((agent) => agent.name).join(', ')})`,
  );
  await Promise.race([closed, untilInterrupted()]);
  await server.close();
  return undefined;
}
