import { Context } from '@temporalio/activity';
import type { AgentRegistry } from '../agents/registry';
import { failure, FailureType } from '../common';
import type { McpGrant } from '../runtime';
import { startHeartbeat } from './activity-context';
import { mcpServerTools } from './describe-agent';
import { McpServerError, McpStartTimeout, type McpServers } from './mcp-servers';
import type { SecretRedactor } from './redact';

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
