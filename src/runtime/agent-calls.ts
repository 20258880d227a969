import { z } from 'zod';
import { trim, type JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';
import type { AgentDefinition, AgentReference, ToolDescriptor } from './agent';
import { providerJsonSchema } from './json-schemas';

/**
 * Tools that call other agents (spec-free runtime behaviour, carried out by the workflow itself): a
 * sub-agent call starts a child run of that agent and returns its answer; a handoff switches the run's
 * active agent at the next compile boundary. Pure: the registry builds the descriptors, the workflow
 * reads the arguments.
 */

/** The most a caller's `context` note may hold (characters): a short hint, not a transcript. */
const MAX_SUBAGENT_CONTEXT_CHARS = 4000;

const SubagentArguments = sharedSchema('runtime/agent-calls#SubagentArguments', () =>
  z.strictObject({
    input: z.string().describe('The task for the agent, self-contained: it does not see this conversation.'),
    context: z
      .string()
      .max(MAX_SUBAGENT_CONTEXT_CHARS)
      .optional()
      .describe('Optional: a short note of what the agent should know from this conversation.'),
  }),
);

export const HandoffArguments = sharedSchema('runtime/agent-calls#HandoffArguments', () =>
  z.strictObject({
    reason: z.string().optional().describe('Optional: why the conversation goes to this agent.'),
  }),
);
export type HandoffArguments = z.infer<typeof HandoffArguments>;

/** A reference in its full form: the agent, and the name and description of the tool that reaches it. */
interface ResolvedAgentReference {
  agent: string;
  tool_name: string;
  description: string;
}

/** Letters, digits, `_` and `-`, at most 64: what every provider accepts as a tool name. */
function providerSafeName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
}

/** The first sentence-ish of an agent's instructions, for a default tool description. */
function summaryOf(instructions: string): string {
  const first = trim(instructions).split('\n')[0] ?? '';
  return first.length > 200 ? `${first.slice(0, 197)}...` : first;
}

function resolveReference(
  reference: AgentReference,
  kind: 'subagent' | 'handoff',
  instructionsOf: (agent: string) => string | undefined,
): ResolvedAgentReference {
  const agent = typeof reference === 'string' ? reference : reference.agent;
  const given: { tool_name?: string; description?: string } = typeof reference === 'string' ? {} : reference;
  const summary = summaryOf(instructionsOf(agent) ?? '');
  const description =
    kind === 'subagent'
      ? `Ask the ${agent} agent to do a task; returns its final answer.${summary ? ` The agent: ${summary}` : ''}`
      : `Hand the conversation over to the ${agent} agent, which answers from then on.${summary ? ` The agent: ${summary}` : ''}`;
  return {
    agent,
    tool_name: given.tool_name ?? providerSafeName(kind === 'subagent' ? agent : `transfer_to_${agent}`),
    description: given.description ?? description,
  };
}

/** The descriptors of an agent's sub-agent and handoff tools, in that order. */
export function agentCallDescriptors(
  agent: Pick<AgentDefinition, 'subagents' | 'handoffs'>,
  instructionsOf: (agent: string) => string | undefined,
): ToolDescriptor[] {
  const build = (kind: 'subagent' | 'handoff', reference: AgentReference): ToolDescriptor => {
    const resolved = resolveReference(reference, kind, instructionsOf);
    return {
      name: resolved.tool_name,
      description: resolved.description,
      parameters: providerJsonSchema(kind === 'subagent' ? SubagentArguments : HandoffArguments),
      best_practices:
        kind === 'subagent'
          ? ['Give the agent one self-contained task; several calls in one batch run in parallel.']
          : ['Hand over only when the other agent is better placed to answer the user from here on.'],
      agent_call: { kind, agent: resolved.agent },
    };
  };
  return [
    ...agent.subagents.map((reference) => build('subagent', reference)),
    ...agent.handoffs.map((reference) => build('handoff', reference)),
  ];
}

/** Why a sub-agent call's arguments cannot start a run, or its task as the child's input. */
export function subagentTask(args: JsonObject): { input: string; context?: string } | { problem: string } {
  const parsed = SubagentArguments.safeParse(args);
  if (!parsed.success)
    return {
      problem: parsed.error.issues
        .map((issue) => `${issue.path.map(String).join('.') || 'arguments'}: ${issue.message}`)
        .join('; '),
    };
  if (trim(parsed.data.input) === '') return { problem: 'input: must not be empty' };
  return parsed.data;
}

/** The child's first user message: the task, after the caller's note when it gave one. */
export function subagentPrompt(task: { input: string; context?: string }): string {
  return task.context && trim(task.context) !== ''
    ? `Context from the caller:\n${task.context}\n\nTask:\n${task.input}`
    : task.input;
}
