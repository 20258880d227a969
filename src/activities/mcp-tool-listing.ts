import { Context } from '@temporalio/activity';
import type { JsonObject } from '../context';
import type { AgentRegistry } from '../agents/registry';
import { failure, FailureType } from '../common';
import { mcpCallLimits, type AgentSpec, type McpGrant, type McpServerConfig, type ToolDescriptor } from '../runtime';
import { startHeartbeat } from './activity-context';
import { McpServerError, McpStartTimeout, type McpServers, type McpToolListing } from './mcp-connections';
import type { SecretRedactor } from './redact';

/*
 * A run's MCP tools: each server's tools as the agent offers them (allow-list, exposed names, whether a
 * call may be sent again, its limits), listed at the run's start (`describeAgent`) and again at each
 * continue-as-new (the `relistMcpTools` activity), and recorded in the run's spec (docs/mcp.md).
 */

/** Attempts at listing an agent's MCP tools before its run fails (McpServerUnavailable). */
const MCP_LIST_ATTEMPTS = 3;

/**
 * The tools of the agent's MCP servers, listed now and recorded with the run's spec, so replays and
 * retries offer the same ones. A server that cannot list them fails this attempt; the last attempt
 * fails the run, and so does the first one a server did not start in (its `start_timeout_seconds`
 * passed: another attempt would wait as long again).
 */
export async function mcpToolsAtStart(spec: AgentSpec, mcp: McpServers | undefined): Promise<ToolDescriptor[]> {
  if (spec.mcp_servers.length === 0) return [];
  const attempt = Context.current().info.attempt;
  try {
    if (!mcp) throw new Error('this worker has no MCP client');
    const lists = await Promise.all(
      spec.mcp_servers.map((server) => mcpServerTools(server, mcp, spec.limits.tool_timeout_seconds)),
    );
    return lists.flat();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof McpStartTimeout) throw failure(FailureType.McpServerUnavailable, message);
    throw failure(FailureType.McpServerUnavailable, `${message} (attempt ${attempt} of ${MCP_LIST_ATTEMPTS})`, {
      retryable: attempt < MCP_LIST_ATTEMPTS,
    });
  }
}

/**
 * One MCP server's tools as the agent offers them (every page, its allow-list, the exposed names): what
 * a run records, and what `patchloop mcp tools` shows. Throws McpServerError naming the server.
 */
export async function mcpServerTools(
  server: McpServerConfig,
  mcp: McpServers,
  toolTimeoutSeconds: number,
): Promise<ToolDescriptor[]> {
  return mcpDescriptors(server, await mcp.listTools(server), toolTimeoutSeconds);
}

/** The exposed name of a server's tool: prefix plus name, with what providers refuse replaced, at most 64. */
export function exposedToolName(server: Pick<McpServerConfig, 'tool_prefix'>, tool: string): string {
  return `${server.tool_prefix}${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
}

/**
 * The descriptors of a server's tools the agent offers (its allow-list), marked with the server; their
 * `timeout_seconds` is a call's longest run in all (`mcpCallLimits`) after the longest start of its
 * server (a call may have to start it), for the batch's timeout.
 */
export function mcpDescriptors(
  server: McpServerConfig,
  tools: readonly McpToolListing[],
  toolTimeoutSeconds: number,
): ToolDescriptor[] {
  const allowed = server.tools === undefined ? tools : tools.filter((tool) => server.tools!.includes(tool.name));
  const missing = (server.tools ?? []).filter((name) => !tools.some((tool) => tool.name === name));
  if (missing.length > 0)
    throw new McpServerError(
      `MCP server '${server.name}' has no tool(s) ${missing.join(', ')} (it lists: ${tools.map((tool) => tool.name).join(', ') || 'none'})`,
    );
  const { idleSeconds, totalSeconds } = mcpCallLimits(server, toolTimeoutSeconds);
  return allowed.map((tool) => ({
    name: exposedToolName(server, tool.name),
    description: tool.description ?? '',
    parameters: tool.inputSchema as JsonObject,
    best_practices: [],
    timeout_seconds: server.start_timeout_seconds + totalSeconds,
    mcp: {
      server: server.name,
      tool: tool.name,
      repeatable: repeatable(tool),
      idle_seconds: idleSeconds,
      total_seconds: totalSeconds,
    },
  }));
}

/**
 * Whether a call interrupted by a crash may be sent again: only when the server says the tool changes
 * nothing (`readOnlyHint`) or that a repeated call has no further effect (`idempotentHint`). Hints are
 * the server's claims; without them a call is assumed to have effects that must not happen twice.
 */
export function repeatable(tool: Pick<McpToolListing, 'annotations'>): boolean {
  return tool.annotations?.readOnlyHint === true || tool.annotations?.idempotentHint === true;
}

/** Which agent's MCP tools to list again, and its own tools (MCP names must not clash with them). */
export interface RelistInput {
  agent: string;
  own_tools: string[];
}

/** The new grant, or why the run keeps the tools it had. */
export type RelistOutcome = { grant: McpGrant } | { problem: string };

/** Attempts at reaching the servers before the run keeps its tools (a server briefly away). */
const RELIST_ATTEMPTS = 3;

/**
 * At continue-as-new: the agent's MCP tools listed anew, from its servers as this worker has them (never
 * from the run's input: a run names its agent, the worker decides what it starts and connects to), gated
 * and routed as the agent says. Recorded like the first list, so replays of the new run see the same.
 * A server that still cannot list after a few attempts, or a list the agent cannot offer, keeps the run
 * on the tools it had, with the reason: a long run does not end because a server was away at one boundary.
 */
export function createRelistMcpTools(registry: AgentRegistry, mcp: McpServers, redactor?: SecretRedactor) {
  return async function relistMcpTools(input: RelistInput): Promise<RelistOutcome> {
    const context = Context.current();
    const attempt = context.info.attempt;
    const limits = registry.limits(input.agent);
    if (!limits) return { problem: `this worker does not serve agent '${input.agent}'` };
    const stopHeartbeat = startHeartbeat(context, () => ({ relisting: input.agent }));
    try {
      const lists = await Promise.all(
        registry.mcpServers(input.agent).map((server) => mcpServerTools(server, mcp, limits.tool_timeout_seconds)),
      );
      return { grant: registry.mcpGrant(input.agent, input.own_tools, lists.flat()) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const problem = redactor?.redact(message) ?? message;
      // A server that could not be reached or listed may be back in a moment; a bad list will not change,
      // nor will a server that did not start within its start_timeout_seconds be quicker at once.
      if (error instanceof McpServerError && !(error instanceof McpStartTimeout) && attempt < RELIST_ATTEMPTS)
        throw failure(FailureType.McpServerUnavailable, `${problem} (attempt ${attempt} of ${RELIST_ATTEMPTS})`);
      return { problem };
    } finally {
      stopHeartbeat();
    }
  };
}
