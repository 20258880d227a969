import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';
import type { AgentDefinition, AgentSpec, ToolDescriptor } from './agent';
import { utf8Bytes } from './user-message';

/**
 * What an agent's definition and a run's spec say about MCP servers, pure and workflow-safe: the
 * `mcp_servers` entries, the reference a listed tool keeps to its server, the limits of a start, a
 * listing and a call, and the grant that joins a run's listed tools to its spec. The worker's side is
 * in `activities/mcp-connections.ts`, `mcp-tool-listing.ts` and `mcp-tool-call.ts` (docs/mcp.md).
 */

/** A call of an MCP tool waits this many times its idle timeout in all, unless the server sets `max_call_seconds`. */
const MCP_CALL_TOTAL_FACTOR = 10;

/** How long an MCP server may take to start (`start_timeout_seconds`) unless it says otherwise. */
const MCP_START_TIMEOUT_SECONDS = 60;
/** The longest `start_timeout_seconds` may be: the activities that list tools are bounded by it. */
const MCP_MAX_START_TIMEOUT_SECONDS = 600;
/** Listing a started server's tools, every page, takes at most this long. */
export const MCP_LISTING_SECONDS = 120;

/**
 * The start-to-close timeout of the activities that list an agent's MCP tools (`describeAgent` at a
 * run's start, `relistMcpTools` at continue-as-new): the slowest start any server may take, then its
 * listing. The worker bounds each server by its own `start_timeout_seconds` and listing time; this is
 * the backstop, and the activities heartbeat meanwhile, so a worker that dies is noticed in seconds.
 */
export const MCP_LISTING_ACTIVITY_SECONDS = MCP_MAX_START_TIMEOUT_SECONDS + MCP_LISTING_SECONDS + 30;

/** The most an agent's MCP tool list may take in its spec (JSON bytes). */
const MAX_MCP_TOOLS_BYTES = 512 * 1024;

/** What every MCP server entry shares: its name, which of its tools the agent sees, and how. */
const mcpCommon = () => ({
  /** Names the server in tool markers and error results; unique within the agent. */
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)'),
  /** An allow-list of the server's tool names (as the server names them); absent: all of them. */
  tools: z.array(z.string().min(1)).optional(),
  /** Prepended to the server's tool names; the result is made provider-safe ([a-zA-Z0-9_-], at most 64). */
  tool_prefix: z.string().default(''),
  /**
   * How long a call of this server's tools may go without an answer or a progress notification (default:
   * the agent's `tool_timeout_seconds`): each `notifications/progress` starts it anew.
   */
  timeout_seconds: z.number().positive().optional(),
  /** The longest a call may run in all, progress or not (default: ten times `timeout_seconds`). */
  max_call_seconds: z.number().positive().optional(),
  /**
   * How long the server may take to start: a stdio process spawned, or an HTTP session opened, and
   * `initialize` answered. Past it the server is given up on (a stdio process is stopped) and the
   * error names it, this limit and its stderr's last lines.
   */
  start_timeout_seconds: z.number().positive().max(MCP_MAX_START_TIMEOUT_SECONDS).default(MCP_START_TIMEOUT_SECONDS),
});

/**
 * An MCP server whose tools an agent offers. Values of `env` and `headers` may name the worker's
 * environment variables as `${VAR}`: they are resolved on the worker, when it connects, and never
 * recorded.
 */
export const McpServerConfig = sharedSchema('runtime/mcp-settings#McpServerConfig', () =>
  z.union([
    z.strictObject({
      ...mcpCommon(),
      /** A stdio server: the process the worker starts (once, and again when it died). */
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      cwd: z.string().optional(),
    }),
    z.strictObject({
      ...mcpCommon(),
      /** A streamable HTTP server. */
      url: z.url(),
      headers: z.record(z.string(), z.string()).default({}),
    }),
  ]),
);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/**
 * A tool of an MCP server: the server (by its name in `mcp_servers`), the tool's name there, and whether
 * a call interrupted by a crash may run again (the server marks it `readOnlyHint` or `idempotentHint`).
 */
export const McpToolReference = sharedSchema('runtime/mcp-settings#McpToolReference', () =>
  z.strictObject({
    server: z.string(),
    tool: z.string(),
    repeatable: z.boolean().optional(),
    /** The call's limits as recorded (`mcpCallLimits`): the batch enforces these, whatever worker runs it. */
    idle_seconds: z.number().positive().optional(),
    total_seconds: z.number().positive().optional(),
  }),
);
export type McpToolReference = z.infer<typeof McpToolReference>;

/**
 * How long one call of a server's tools may take: `idleSeconds` without an answer or a progress
 * notification, `totalSeconds` in all. The total, plus the server's start (a call may have to start
 * it), is recorded as the tool's `timeout_seconds`, so the batch activity's start-to-close timeout
 * covers the longest call; the batch enforces both.
 */
export function mcpCallLimits(
  server: Pick<McpServerConfig, 'timeout_seconds' | 'max_call_seconds'>,
  agentToolTimeoutSeconds: number,
): { idleSeconds: number; totalSeconds: number } {
  const idleSeconds = server.timeout_seconds ?? agentToolTimeoutSeconds;
  const totalSeconds = Math.max(idleSeconds, server.max_call_seconds ?? idleSeconds * MCP_CALL_TOTAL_FACTOR);
  return { idleSeconds, totalSeconds };
}

/** Why an agent's `mcp_servers` cannot be served (a server name given twice), if they cannot. */
export function mcpServersProblem(agent: Pick<AgentDefinition, 'name' | 'mcp_servers'>): string | undefined {
  const servers = agent.mcp_servers.map((server) => server.name);
  const twice = servers.filter((name, index) => servers.indexOf(name) !== index);
  return twice.length > 0 ? `agent '${agent.name}': mcp_servers names ${twice.join(', ')} more than once` : undefined;
}

/** Why an agent's tools cannot all be offered (a name given twice, its own and its MCP servers'), if they cannot. */
export function mcpToolClash(agentName: string, names: readonly string[]): string | undefined {
  const clash = names.filter((toolName, index) => names.indexOf(toolName) !== index);
  return clash.length > 0
    ? `agent '${agentName}': tool name(s) ${[...new Set(clash)].join(', ')} given twice (set a tool_prefix per MCP server)`
    : undefined;
}

/**
 * Why the listed tools cannot go into a run's spec: the list is carried by every continue-as-new, so it
 * stays far below a payload's limit.
 */
export function mcpToolsTooLarge(agentName: string, listed: readonly ToolDescriptor[]): string | undefined {
  const bytes = utf8Bytes(JSON.stringify(listed));
  return bytes > MAX_MCP_TOOLS_BYTES
    ? `agent '${agentName}': its MCP servers list ${listed.length} tools in ${bytes} bytes, over ${MAX_MCP_TOOLS_BYTES}: narrow them with each server's "tools" allow-list`
    : undefined;
}

/**
 * Whether the agent's definition gates this MCP tool (by its exposed name): a name of its
 * `needs_approval` that is none of its registered tools is one its servers listed, or its run would
 * have failed at its start (`withMcpTools`).
 */
export function gatesMcpTool(
  agent: Pick<AgentDefinition, 'mcp_servers' | 'needs_approval' | 'tools'>,
  toolName: string,
): boolean {
  return agent.mcp_servers.length > 0 && agent.needs_approval.includes(toolName) && !agent.tools.includes(toolName);
}

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

/**
 * The grant of these listed tools, gated and routed as the agent's `needs_approval` and
 * `tool_task_queues` say (their names checked by the registry first, `AgentRegistry.mcpGrant`).
 */
export function mcpGrantOf(
  agent: Pick<AgentDefinition, 'mcp_servers' | 'needs_approval' | 'tool_task_queues'>,
  listed: readonly ToolDescriptor[],
): McpGrant {
  const names = listed.map((tool) => tool.name);
  return {
    mcp_servers: agent.mcp_servers,
    tools: [...listed],
    needs_approval: names.filter((name) => agent.needs_approval.includes(name)),
    tool_task_queues: Object.fromEntries(
      names.flatMap((name) => (agent.tool_task_queues[name] ? [[name, agent.tool_task_queues[name]]] : [])),
    ),
  };
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
