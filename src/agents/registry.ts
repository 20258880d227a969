import {
  AgentDefinition,
  AgentSpec,
  isSelfRefTool,
  selfRefToolDescriptors,
  waitToolDescriptors,
  type AgentDefinitionInput,
  type McpGrant,
  type McpServerConfig,
  type ToolDescriptor,
  ConfigurationError,
  gatesMcpTool,
  mcpGrantOf,
  mcpServersProblem,
  mcpToolClash,
  mcpToolsTooLarge,
  ownToolNames,
  agentCallDescriptors,
  withMcpGrant,
  budgetProblem,
  contextProblem,
  MODEL_WINDOWS,
  modelWindow,
  agentModel,
  GUARDRAIL_STAGES,
} from '../runtime';
import type { LlmFunction } from '../functions/define-llm-function';
import type { Tool } from '../tools/define-tool';
import type { Guardrail } from '../tools/define-guardrail';
import { failure, FailureType } from '../common';

/** The agents and tools a worker serves. Checked once, when the worker starts. */
export class AgentRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly agents = new Map<string, AgentDefinition>();
  private readonly functions = new Map<string, LlmFunction>();
  private readonly guardrails = new Map<string, Guardrail>();

  constructor(
    tools: readonly Tool[],
    agents: readonly AgentDefinitionInput[],
    functions: readonly LlmFunction[] = [],
    guardrails: readonly Guardrail[] = [],
  ) {
    for (const guardrail of guardrails) {
      if (this.guardrails.has(guardrail.name))
        throw new ConfigurationError(`guardrail '${guardrail.name}' is registered twice`);
      this.guardrails.set(guardrail.name, guardrail);
    }
    for (const tool of tools) {
      if (isSelfRefTool(tool.name)) throw new ConfigurationError(`tool name '${tool.name}' is reserved for SelfRef`);
      if (this.tools.has(tool.name)) throw new ConfigurationError(`tool '${tool.name}' is registered twice`);
      this.tools.set(tool.name, tool);
    }
    for (const input of agents) {
      const parsed = parseAgentDefinition(input);
      if ('problem' in parsed) throw new ConfigurationError(parsed.problem);
      const agent = parsed.agent;
      const problem = contextProblem(agent.context) ?? budgetProblem(agent.budget);
      if (problem) throw new ConfigurationError(`agent '${agent.name}': ${problem}`);
      if (this.agents.has(agent.name)) throw new ConfigurationError(`agent '${agent.name}' is registered twice`);
      const reserved = agent.tools.filter((name) => isSelfRefTool(name));
      if (reserved.length > 0)
        throw new ConfigurationError(`agent '${agent.name}' lists ${reserved.join(', ')}: set "selfref": true instead`);
      const missing = agent.tools.filter((name) => !this.tools.has(name));
      if (missing.length > 0)
        throw new ConfigurationError(`agent '${agent.name}' uses unregistered tool(s): ${missing.join(', ')}`);
      // With MCP servers, these names may be their tools': checked when a run lists them (withMcpTools).
      const unknown = agent.mcp_servers.length === 0 ? unknownToolNames(agent) : undefined;
      if (unknown) throw new ConfigurationError(unknown);
      const servers = mcpServersProblem(agent);
      if (servers) throw new ConfigurationError(servers);
      this.checkGuardrails(agent);
      this.agents.set(agent.name, agent);
    }
    for (const agent of this.agents.values()) this.checkAgentCalls(agent);
    for (const fn of functions) {
      if (this.functions.has(fn.name)) throw new ConfigurationError(`function '${fn.name}' is registered twice`);
      const missing = (fn.definition.tools ?? []).filter((name) => !this.tools.has(name));
      if (missing.length > 0)
        throw new ConfigurationError(`function '${fn.name}' uses unregistered tool(s): ${missing.join(', ')}`);
      this.functions.set(fn.name, fn);
    }
  }

  /**
   * An agent's sub-agents and handoffs name agents this worker serves, and their tools' names clash with
   * none of its other tools (a handoff to itself would change nothing: refused).
   */
  private checkAgentCalls(agent: AgentDefinition): void {
    const calls = this.agentCalls(agent);
    const unknown = calls.filter((call) => !this.agents.has(call.agent_call!.agent));
    if (unknown.length > 0)
      throw new ConfigurationError(
        `agent '${agent.name}': ${unknown.map((call) => `${call.agent_call!.kind} '${call.agent_call!.agent}'`).join(', ')} not among this worker's agents (${this.agentNames.join(', ')})`,
      );
    const self = calls.filter((call) => call.agent_call!.kind === 'handoff' && call.agent_call!.agent === agent.name);
    if (self.length > 0) throw new ConfigurationError(`agent '${agent.name}' hands off to itself`);
    const names = [
      ...agent.tools,
      ...(agent.selfref ? selfRefToolDescriptors().map((tool) => tool.name) : []),
      ...waitToolDescriptors(agent.waits).map((tool) => tool.name),
      ...calls.map((call) => call.name),
    ];
    const clash = mcpToolClash(agent.name, names);
    if (clash) throw new ConfigurationError(clash);
    const routed = calls.filter((call) => agent.tool_task_queues[call.name]);
    if (routed.length > 0)
      throw new ConfigurationError(
        `agent '${agent.name}': tool_task_queues names ${routed.map((call) => call.name).join(', ')}, which call agents: the workflow runs them`,
      );
  }

  /** Every code check an agent lists is registered, may run at that stage, and takes its options. */
  private checkGuardrails(agent: AgentDefinition): void {
    for (const stage of GUARDRAIL_STAGES) {
      for (const check of agent.guardrails?.[stage] ?? []) {
        if (!('guardrail' in check)) continue;
        const where = `agent '${agent.name}': guardrails.${stage}: '${check.guardrail}'`;
        const guardrail = this.guardrails.get(check.guardrail);
        if (!guardrail)
          throw new ConfigurationError(
            `${where} is not registered (this worker has ${[...this.guardrails.keys()].join(', ') || 'no guardrails'})`,
          );
        if (!guardrail.stages.includes(stage))
          throw new ConfigurationError(`${where} checks ${guardrail.stages.join(', ')} only`);
        const options = guardrail.options.safeParse(check.options ?? {});
        if (!options.success)
          throw new ConfigurationError(`${where}: options: ${options.error.issues[0]?.message ?? 'invalid'}`);
      }
    }
  }

  /** A registered guardrail (the agents' were checked when the worker started). */
  guardrail(name: string): Guardrail | undefined {
    return this.guardrails.get(name);
  }

  /** The agent's sub-agent and handoff tools. */
  private agentCalls(agent: AgentDefinition): ToolDescriptor[] {
    return agentCallDescriptors(agent, (name) => this.agents.get(name)?.instructions);
  }

  get functionNames(): string[] {
    return [...this.functions.keys()];
  }

  /** A registered function; an unknown name is a non-retryable failure. */
  llmFunction(name: string): LlmFunction {
    const fn = this.functions.get(name);
    if (!fn)
      throw failure(
        FailureType.UnknownFunction,
        `unknown function '${name}'; this worker serves: ${this.functionNames.join(', ') || 'no functions'}`,
      );
    return fn;
  }

  /** The descriptors of registered tools by name. */
  toolDescriptors(names: readonly string[]): ToolDescriptor[] {
    return names.map((name) => this.tools.get(name)!.descriptor);
  }

  get agentNames(): string[] {
    return [...this.agents.keys()];
  }

  /**
   * The agent as data for the workflow, with its registered tools (a run's start adds its MCP servers'
   * with `withMcpTools`); an unknown name is a non-retryable failure.
   */
  describe(name: string, defaultModel: string, modelWindows: Readonly<Record<string, number>> = {}): AgentSpec {
    const agent = this.agents.get(name);
    if (!agent) {
      throw failure(
        FailureType.UnknownAgent,
        `unknown agent '${name}'; this worker serves: ${this.agentNames.join(', ') || 'no agents'}`,
      );
    }
    const own = agent.tools.map((toolName) => this.tools.get(toolName)!.descriptor);
    const selfref = agent.selfref ? selfRefToolDescriptors() : [];
    const waits = waitToolDescriptors(agent.waits);
    const calls = this.agentCalls(agent);
    // Tools gated in code join the agent's list; the reviewToolCalls activity decides per call.
    const gated = agent.tools.filter((toolName) => {
      const flag = this.tools.get(toolName)!.needsApproval;
      return agent.needs_approval.includes(toolName) || (flag !== undefined && flag !== false);
    });
    const model = agentModel(agent, defaultModel);
    // The window: the agent's own setting, else the worker's PATCHLOOP_MODEL_WINDOWS, else the table.
    const window = agent.context.window_tokens ?? modelWindow(model, MODEL_WINDOWS, modelWindows);
    // A tail the agent set larger than a table's window is cut to fit it (keepRecentTokens), not refused.
    const context = { ...agent.context, window_tokens: window };
    return AgentSpec.parse({
      ...agent,
      context,
      needs_approval: [
        ...gated,
        ...calls.flatMap((tool) => (agent.needs_approval.includes(tool.name) ? [tool.name] : [])),
      ],
      tool_task_queues: this.taskQueues(agent),
      tools: [...agent.tools, ...[...selfref, ...waits, ...calls].map((tool) => tool.name)],
      model,
      tool_descriptors: [...own, ...selfref, ...waits, ...calls],
    });
  }

  /**
   * The agent's spec (`describe`) with the tools its MCP servers listed (`mcpGrant`). Where a run's start
   * (`describeAgent`) and `patchloop mcp tools` check those names.
   */
  withMcpTools(spec: AgentSpec, listed: readonly ToolDescriptor[]): AgentSpec {
    return withMcpGrant(spec, this.mcpGrant(spec.name, ownToolNames(spec), listed));
  }

  /**
   * What the agent's MCP servers give a run: the listed tools, offered beside the agent's own tools
   * (`own`), gated and routed as its `needs_approval` and `tool_task_queues` say, with its servers'
   * configuration as this worker has it. A name given twice fails with McpServerUnavailable, a
   * `needs_approval` or `tool_task_queues` name the agent neither registered nor listed with
   * UnknownAgentTool (both non-retryable: listing again cannot help).
   */
  mcpGrant(agentName: string, own: readonly string[], listed: readonly ToolDescriptor[]): McpGrant {
    const agent = this.agents.get(agentName);
    if (!agent) throw failure(FailureType.UnknownAgent, `unknown agent '${agentName}'`);
    const names = listed.map((tool) => tool.name);
    const clash = mcpToolClash(agentName, [...own, ...names]);
    if (clash) throw failure(FailureType.McpServerUnavailable, clash);
    const unknown = unknownToolNames(agent, names);
    if (unknown) throw failure(FailureType.UnknownAgentTool, unknown);
    const tooLarge = mcpToolsTooLarge(agentName, listed);
    if (tooLarge) throw failure(FailureType.McpServerUnavailable, tooLarge);
    return mcpGrantOf(agent, listed);
  }

  /**
   * Where the agent's registered tools run when not on the workflow's own queue: the tools' own, then
   * the agent's map (its MCP tools are routed by the map only, `mcpGrant`).
   */
  taskQueues(agent: AgentDefinition): Record<string, string> {
    const queues: Record<string, string> = {};
    for (const name of agent.tools) {
      const queue = agent.tool_task_queues[name] ?? this.tools.get(name)!.taskQueue;
      if (queue) queues[name] = queue;
    }
    return queues;
  }

  /**
   * The tools agents route to `queue` (`agent/tool`): their registered tools' queues and every name of
   * their `tool_task_queues`, which for an agent with MCP servers may name tools its servers list only
   * when a run starts. A tools-only worker for a queue nothing is routed to refuses to start.
   */
  routedTo(queue: string): string[] {
    return this.definitions.flatMap((agent) =>
      Object.entries({ ...this.taskQueues(agent), ...agent.tool_task_queues }).flatMap(([tool, routed]) =>
        routed === queue ? [`${agent.name}/${tool}`] : [],
      ),
    );
  }

  /** The agent's MCP servers as this worker has them (`${VAR}` values unresolved); none for an unknown agent. */
  mcpServers(agentName: string): McpServerConfig[] {
    return this.agents.get(agentName)?.mcp_servers ?? [];
  }

  /** One of the agent's MCP servers, by name, as the worker has it (`${VAR}` values unresolved). */
  mcpServer(agentName: string, serverName: string): McpServerConfig | undefined {
    return this.agents.get(agentName)?.mcp_servers.find((server) => server.name === serverName);
  }

  /** Agents as their definitions (a tools-only worker checks it can run what is routed to it). */
  get definitions(): AgentDefinition[] {
    return [...this.agents.values()];
  }

  limits(agentName: string): AgentDefinition['limits'] | undefined {
    return this.agents.get(agentName)?.limits;
  }

  /** Whether the agent has the SelfRef tools. */
  selfref(agentName: string): boolean {
    return this.agents.get(agentName)?.selfref ?? false;
  }

  /** Whether the agent's definition gates the tool (beyond what the tool itself says). */
  gatedByAgent(agentName: string, toolName: string): boolean {
    return this.agents.get(agentName)?.needs_approval.includes(toolName) ?? false;
  }

  /** Whether the agent's definition gates this MCP tool (by its exposed name, `gatesMcpTool`). */
  gatesMcpTool(agentName: string, toolName: string): boolean {
    const agent = this.agents.get(agentName);
    return agent !== undefined && gatesMcpTool(agent, toolName);
  }

  /**
   * Whether the agent's definition gates one of its sub-agent or handoff tools (by the tool's name): the
   * workflow carries those calls out, but a person decides first, like for any tool.
   */
  gatesAgentCall(agentName: string, toolName: string): boolean {
    const agent = this.agents.get(agentName);
    return (
      agent !== undefined &&
      agent.needs_approval.includes(toolName) &&
      this.agentCalls(agent).some((tool) => tool.name === toolName)
    );
  }

  /** A tool the agent may call, or undefined (the model then sees "not found"). */
  toolFor(agentName: string, toolName: string): Tool | undefined {
    const agent = this.agents.get(agentName);
    if (agent) return agent.tools.includes(toolName) ? this.tools.get(toolName) : undefined;
    // A function runs under its own name, with the tools it declares.
    const fn = this.functions.get(agentName);
    return fn?.definition.tools?.includes(toolName) ? this.tools.get(toolName) : undefined;
  }
}

/**
 * Why the agent's `needs_approval` or `tool_task_queues` name tools it does not have, if they do: its
 * registered tools, plus `mcpTools` (its MCP servers' listed names) once a run has listed them.
 */
function unknownToolNames(agent: AgentDefinition, mcpTools?: readonly string[]): string | undefined {
  const calls = agentCallDescriptors(agent, () => undefined).map((tool) => tool.name);
  const available = [...agent.tools, ...calls, ...(mcpTools ?? [])];
  const among = mcpTools === undefined ? 'among its tools' : "among its tools or its MCP servers' tools";
  const listing = `(${available.join(', ') || 'none'})`;
  const problems: string[] = [];
  const ungated = agent.needs_approval.filter((name) => !available.includes(name));
  if (ungated.length > 0)
    problems.push(
      `needs_approval lists ${ungated.join(', ')}, which ${ungated.length === 1 ? 'is' : 'are'} not ${among} ${listing}`,
    );
  const unrouted = Object.keys(agent.tool_task_queues).filter((name) => !available.includes(name));
  if (unrouted.length > 0) problems.push(`tool_task_queues names ${unrouted.join(', ')}, not ${among} ${listing}`);
  return problems.length > 0 ? `agent '${agent.name}': ${problems.join('; ')}` : undefined;
}

/**
 * An agent definition with its defaults, or what is wrong with it in one line that names the agent and
 * each field (`agent 'forecaster': context.compact_at: ...`); `label` names an agent without a name.
 */
export function parseAgentDefinition(input: unknown, label?: string): { agent: AgentDefinition } | { problem: string } {
  const parsed = AgentDefinition.safeParse(input);
  if (parsed.success) return { agent: parsed.data };
  const name = (input as { name?: unknown } | null)?.name;
  return {
    problem: `agent ${typeof name === 'string' ? `'${name}'` : (label ?? `'${String(name)}'`)}: ${describeIssues(parsed.error.issues)}`,
  };
}

/** Zod's issues as one line that names each field (`context.compact_at: ...`). */
function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): string {
  return issues.map((issue) => `${issue.path.map(String).join('.') || '(definition)'}: ${issue.message}`).join('; ');
}
