import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentRegistry } from '../agents/registry';
import { carriedFailure, failure, FailureType, type SearchAttributesFact } from '../common';
import type { AgentSpec } from '../runtime';
import { startHeartbeat } from './activity-context';
import type { McpServers } from './mcp-connections';
import { mcpToolsAtStart } from './mcp-tool-listing';

/** What the worker knows about its deployment that runs take along in their agent spec. */
export interface DeploymentFacts {
  payloadsByReference: boolean;
  /** The store's threshold (with payloads by reference): results stay under it. */
  payloadThresholdBytes?: number;
  /** Whether the namespace has patchloop's search attributes; checked (cached briefly) when a run resolves its agent. */
  searchAttributes: () => Promise<boolean>;
  /** PATCHLOOP_MODEL_WINDOWS: context windows the worker adds to the table of well-known models. */
  modelWindows?: Readonly<Record<string, number>>;
  /** Other workers on this worker's task queue, for the failure of a run of an agent it does not serve. */
  sharedQueue?: (agent: string) => Promise<string | undefined>;
}

/**
 * Resolves an agent to data once per run; recorded in history, so a replay sees the same agent (a
 * definition changed by a deploy meanwhile reaches new runs only). `describeAgentLocally` is the same as
 * a local activity, in the run's first workflow task: no activity to schedule and dispatch (one billable
 * action less and a server round trip), but null for an agent with MCP servers, whose listing may take
 * seconds, longer than a workflow task should wait: the run then asks `describeAgent`.
 */
export function createDescribeAgent(
  registry: AgentRegistry,
  defaultModel: string,
  facts: DeploymentFacts,
  mcp?: McpServers,
) {
  async function describeAgent(name: string): Promise<AgentSpec> {
    const context = Context.current();
    // Listing MCP servers may take seconds: a worker that dies meanwhile is noticed by its heartbeat.
    const stopHeartbeat = context.info.isLocal ? () => undefined : startHeartbeat(context, () => ({ resolving: name }));
    try {
      return await describe(name);
    } catch (error) {
      throw await explained(error, name);
    } finally {
      stopHeartbeat();
    }
  }

  async function describeAgentLocally(name: string): Promise<AgentSpec | null> {
    try {
      if (registry.describe(name, defaultModel, facts.modelWindows).mcp_servers.length > 0) return null;
    } catch (error) {
      throw await explained(error, name);
    }
    return describeAgent(name);
  }

  return { describeAgent, describeAgentLocally };

  async function explained(error: unknown, name: string): Promise<unknown> {
    return withSearchAttributesFact(await withSharedQueue(error, name));
  }

  /**
   * An agent this worker does not serve, on a task queue other workers poll too: the run may be another
   * project's, so the failure names them and the fix (a task queue per project).
   */
  async function withSharedQueue(error: unknown, name: string): Promise<unknown> {
    if (!(error instanceof ApplicationFailure) || error.type !== FailureType.UnknownAgent || !facts.sharedQueue)
      return error;
    const note = await facts.sharedQueue(name).catch(() => undefined);
    return note ? failure(FailureType.UnknownAgent, `${error.message}; ${note}`) : error;
  }

  /**
   * A failure that may end the run before it has an agent (unknown agent, MCP servers that cannot list
   * their tools) says whether the namespace has patchloop's search attributes: the run then still shows
   * as failed, for the agent it named.
   */
  async function withSearchAttributesFact(error: unknown): Promise<unknown> {
    if (!(error instanceof ApplicationFailure)) return error;
    const fact: SearchAttributesFact = { search_attributes: await facts.searchAttributes().catch(() => false) };
    return carriedFailure(error.type, error.message, {
      retryable: !error.nonRetryable,
      details: [...(error.details ?? []), fact],
      ...(error.cause ? { cause: error.cause } : {}),
    });
  }

  async function describe(name: string): Promise<AgentSpec> {
    const described = registry.describe(name, defaultModel, facts.modelWindows);
    // The listed tools join the spec, gated and routed as the agent says; a name it gates or routes that
    // neither it nor its servers have fails the run here (non-retryable), as `patchloop mcp tools` reports.
    const spec = registry.withMcpTools(described, await mcpToolsAtStart(described, mcp));
    return {
      ...spec,
      payloads_by_reference: facts.payloadsByReference,
      ...(facts.payloadsByReference && facts.payloadThresholdBytes !== undefined
        ? { payload_threshold_bytes: facts.payloadThresholdBytes }
        : {}),
      search_attributes: await facts.searchAttributes(),
    };
  }
}
