import type { McpServerConfig } from './agent';

/** A call of an MCP tool waits this many times its idle timeout in all, unless the server sets `max_call_seconds`. */
export const MCP_CALL_TOTAL_FACTOR = 10;

/**
 * How long one call of a server's tools may take: `idleSeconds` without an answer or a progress
 * notification, `totalSeconds` in all. The total is recorded as the tool's `timeout_seconds`, so the
 * batch activity's start-to-close timeout covers the longest call; the batch enforces both.
 */
export function mcpCallLimits(
  server: Pick<McpServerConfig, 'timeout_seconds' | 'max_call_seconds'>,
  agentToolTimeoutSeconds: number,
): { idleSeconds: number; totalSeconds: number } {
  const idleSeconds = server.timeout_seconds ?? agentToolTimeoutSeconds;
  const totalSeconds = Math.max(idleSeconds, server.max_call_seconds ?? idleSeconds * MCP_CALL_TOTAL_FACTOR);
  return { idleSeconds, totalSeconds };
}
