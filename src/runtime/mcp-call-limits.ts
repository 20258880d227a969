import type { McpServerConfig } from './agent';

/** A call of an MCP tool waits this many times its idle timeout in all, unless the server sets `max_call_seconds`. */
export const MCP_CALL_TOTAL_FACTOR = 10;

/** How long an MCP server may take to start (`start_timeout_seconds`) unless it says otherwise. */
export const MCP_START_TIMEOUT_SECONDS = 60;
/** The longest `start_timeout_seconds` may be: the activities that list tools are bounded by it. */
export const MCP_MAX_START_TIMEOUT_SECONDS = 600;
/** Listing a started server's tools, every page, takes at most this long. */
export const MCP_LISTING_SECONDS = 120;

/**
 * The start-to-close timeout of the activities that list an agent's MCP tools (`describeAgent` at a
 * run's start, `relistMcpTools` at continue-as-new): the slowest start any server may take, then its
 * listing. The worker bounds each server by its own `start_timeout_seconds` and listing time; this is
 * the backstop, and the activities heartbeat meanwhile, so a worker that dies is noticed in seconds.
 */
export const MCP_LISTING_ACTIVITY_SECONDS = MCP_MAX_START_TIMEOUT_SECONDS + MCP_LISTING_SECONDS + 30;

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
