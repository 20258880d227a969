import { A2A_PROTOCOL_VERSION, type AgentCard } from '@a2a-js/sdk';
import type { AgentDefinitionInput } from '../../runtime';
import { agentDescription } from '../agent-description';

/** The scheme name the card gives the gateway's API keys (`Authorization: Bearer KEY`). */
const SECURITY_SCHEME = 'patchloopKey';

/**
 * The Agent Card of one patchloop agent served at `url` (`/a2a/AGENT`): JSON-RPC at that URL and
 * HTTP+JSON beside it (the same base), streaming, the Bearer key scheme every call but the card needs,
 * and one skill for what the agent does (from its instructions) plus one per tool it may call.
 */
export function agentCardOf(agent: AgentDefinitionInput, url: string): AgentCard {
  const description = agentDescription(agent);
  const text = ['text/plain'];
  const skill = (id: string, name: string, about: string, tags: string[]) => ({
    id,
    name,
    description: about,
    tags,
    examples: [],
    inputModes: text,
    outputModes: text,
    securityRequirements: [],
  });
  return {
    name: agent.name,
    description,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
      { url, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [SECURITY_SCHEME]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: 'A patchloop API key (patchloop keys create)', scheme: 'Bearer', bearerFormat: '' },
        },
      },
    },
    securityRequirements: [{ schemes: { [SECURITY_SCHEME]: { list: [] } } }],
    defaultInputModes: text,
    defaultOutputModes: text,
    skills: [
      skill(agent.name, agent.name, description, ['agent']),
      ...(agent.tools ?? []).map((tool) =>
        skill(`${agent.name}.${tool}`, tool, `${agent.name} may call the tool ${tool}.`, ['tool']),
      ),
    ],
    signatures: [],
  };
}
