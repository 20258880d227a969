import type { AgentRegistry } from '../agents/registry';
import type { AgentSpec } from '../runtime';

/** What the worker knows about its deployment that runs take along in their agent spec. */
export interface DeploymentFacts {
  payloadsByReference: boolean;
  /** The store's threshold (with payloads by reference): results stay under it. */
  payloadThresholdBytes?: number;
  /** Whether the namespace has patchloop's search attributes; checked (cached briefly) when a run resolves its agent. */
  searchAttributes: () => Promise<boolean>;
  /** PATCHLOOP_MODEL_WINDOWS: context windows the worker adds to the table of well-known models. */
  modelWindows?: Readonly<Record<string, number>>;
}

/** Resolves an agent to data once per run; recorded in history, so a replay sees the same agent. */
export function createDescribeAgent(registry: AgentRegistry, defaultModel: string, facts: DeploymentFacts) {
  return async function describeAgent(name: string): Promise<AgentSpec> {
    return {
      ...registry.describe(name, defaultModel, facts.modelWindows),
      payloads_by_reference: facts.payloadsByReference,
      ...(facts.payloadsByReference && facts.payloadThresholdBytes !== undefined
        ? { payload_threshold_bytes: facts.payloadThresholdBytes }
        : {}),
      search_attributes: await facts.searchAttributes(),
    };
  };
}
