import { ApplicationFailure } from '@temporalio/common';
import { AgentDefinition, AgentSpec, type AgentDefinitionInput } from '../runtime';
import type { Tool } from '../tools/define-tool';

/** The agents and tools a worker serves. Checked once, when the worker starts. */
export class AgentRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly agents = new Map<string, AgentDefinition>();

  constructor(tools: readonly Tool[], agents: readonly AgentDefinitionInput[]) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`tool '${tool.name}' is registered twice`);
      this.tools.set(tool.name, tool);
    }
    for (const input of agents) {
      const agent = AgentDefinition.parse(input);
      if (this.agents.has(agent.name)) throw new Error(`agent '${agent.name}' is registered twice`);
      const missing = agent.tools.filter((name) => !this.tools.has(name));
      if (missing.length > 0) throw new Error(`agent '${agent.name}' uses unregistered tool(s): ${missing.join(', ')}`);
      this.agents.set(agent.name, agent);
    }
  }

  get agentNames(): string[] {
    return [...this.agents.keys()];
  }

  /** The agent as data for the workflow; an unknown name is a non-retryable failure. */
  describe(name: string, defaultModel: string): AgentSpec {
    const agent = this.agents.get(name);
    if (!agent) {
      throw ApplicationFailure.nonRetryable(`unknown agent '${name}'; this worker serves: ${this.agentNames.join(', ') || 'no agents'}`, 'UnknownAgent');
    }
    return AgentSpec.parse({
      ...agent,
      model: agent.model ?? defaultModel,
      tool_descriptors: agent.tools.map((toolName) => this.tools.get(toolName)!.descriptor),
    });
  }

  limits(agentName: string): AgentDefinition['limits'] | undefined {
    return this.agents.get(agentName)?.limits;
  }

  /** A tool the agent may call, or undefined (the model then sees "not found"). */
  toolFor(agentName: string, toolName: string): Tool | undefined {
    const agent = this.agents.get(agentName);
    return agent?.tools.includes(toolName) ? this.tools.get(toolName) : undefined;
  }
}
