import {
  parseSelfRefSnapshot,
  renderSystemPromptWithExperiences,
  serializeToolResult,
  trim,
  type JsonObject,
  type Message,
  type Mutation,
} from '../context';
import { HandoffArguments } from './agent-calls';
import type { AgentSpec, ToolDescriptor } from './agent';

/**
 * Handoffs (`handoffs` in an agent definition, offered as `transfer_to_<agent>` tools): a call switches
 * the run's active agent at the next compile boundary, and the transcript goes on. Pure: the workflow
 * (`workflows/loop/handoffs.ts`) resolves the agent and carries out the switch with what these return.
 */

/** The agent a tool hands the conversation to, when the tool is a handoff. */
export function handoffTarget(descriptors: readonly ToolDescriptor[], toolName: string): string | undefined {
  const tool = descriptors.find((descriptor) => descriptor.name === toolName);
  return tool?.agent_call?.kind === 'handoff' ? tool.agent_call.agent : undefined;
}

/** The call's `reason`, or why its arguments are not a handoff's. */
export function handoffReason(args: JsonObject): { reason?: string } | { problem: string } {
  const parsed = HandoffArguments.safeParse(args);
  if (!parsed.success)
    return {
      problem: parsed.error.issues
        .map((issue) => `${issue.path.map(String).join('.') || 'arguments'}: ${issue.message}`)
        .join('; '),
    };
  const reason = parsed.data.reason !== undefined ? trim(parsed.data.reason) : '';
  return reason !== '' ? { reason: reason.slice(0, 1000) } : {};
}

/** What the model reads as the result of the handoff that took place. */
export function handoffResultContent(agent: string): string {
  return serializeToolResult({ handoff: agent, status: 'transferred' });
}

/** What the model reads as the result of a second handoff in one batch. */
export function extraHandoffMessage(first: { name: string; id: string }): string {
  return `only one handoff per batch: ${first.name} (call ${first.id}) was carried out first, this one was not`;
}

/**
 * The transcript's change at a handoff, as a mutation of the context model: a `ContextReplaceMutation`
 * whose messages are the transcript as it stands, with its system message now holding the new agent's
 * instructions (left out when they are empty, as a seed leaves them out).
 *
 * Why this kind: the system prompt is a message of the transcript, and of the ten kinds only
 * `ContextReplaceMutation` may change a message already there (the others append, compact into a
 * summary, or rebuild the system prompt from the one it holds); the change must be a mutation, so it
 * is folded by `apply_mutations` like every other runtime change, replays from the same inputs, and a
 * SelfRef snapshot re-parsed from the transcript sees the new base prompt (spec 4.3 rule 1 and 4.6).
 * Everything else is kept as it was: the conversation, a compaction summary, and the run's SelfRef
 * experiences, which stay in the new system message (they are the run's memory, not the agent's).
 */
export function handoffMutation(transcript: readonly Message[], instructions: string): Mutation {
  const experiences = parseSelfRefSnapshot(transcript).experiences;
  const system = renderSystemPromptWithExperiences(instructions, experiences);
  return {
    type: 'ContextReplaceMutation',
    messages: [
      ...(system !== '' ? [{ role: 'system', content: system }] : []),
      ...transcript.filter((message) => message['role'] !== 'system'),
    ],
  };
}

/**
 * The spec the run goes on with: the new agent's (instructions, tools, model, provider, limits, MCP
 * servers), with the run's budget and context settings kept. A handoff changes who answers, not what
 * the run may spend or how it keeps inside its window; and the spec is what continue-as-new carries
 * and a continued run opens with, so keeping them here keeps them across that boundary too.
 */
export function handedOffSpec(current: AgentSpec, next: AgentSpec): AgentSpec {
  return { ...next, budget: current.budget, context: current.context };
}
