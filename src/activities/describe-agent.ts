import type { AgentRegistry } from '../agents/registry';
import type { AgentSpec } from '../runtime';

/** Resolves an agent to data once per run; recorded in history, so a replay sees the same agent. */
export function createDescribeAgent(registry: AgentRegistry, defaultModel: string, payloadsByReference: boolean) {
  return async function describeAgent(name: string): Promise<AgentSpec> {
    return { ...registry.describe(name, defaultModel), payloads_by_reference: payloadsByReference };
  };
}
