import type { ChatRequestBody, Responder } from '../src/fake-model/server';
import type { FakeStep } from '../src/fake-model/steps';

/**
 * One script per agent for a fake model that several runs share at once (a parent and its sub-agents):
 * a request goes to the script of the agent whose instructions its system prompt holds (last), so concurrent
 * children answer in any order. Fails loudly: a request no agent claims, or one past the end of its
 * agent's script, is answered with an error and recorded; `assertDone` also names unused steps.
 */
export function scriptsByAgent(scripts: Record<string, { instructions: string; steps: FakeStep[] }>) {
  const queues = new Map(Object.entries(scripts).map(([agent, script]) => [agent, [...script.steps]]));
  const received = new Map<string, ChatRequestBody[]>(Object.keys(scripts).map((agent) => [agent, []]));
  const problems: string[] = [];
  const agentOf = (body: ChatRequestBody): string | undefined => {
    const first = body.messages[0] as { role?: string; content?: unknown } | undefined;
    const system = first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
    // The instructions that come last: tool descriptions before them may quote other agents' (a sub-agent's).
    return Object.entries(scripts)
      .map(([agent, script]) => [agent, system.lastIndexOf(script.instructions)] as const)
      .filter(([, at]) => at >= 0)
      .sort(([, a], [, b]) => b - a)[0]?.[0];
  };
  const responder: Responder = (body) => {
    const agent = agentOf(body);
    const step = agent ? queues.get(agent)?.shift() : undefined;
    if (!agent || !step) {
      problems.push(
        agent
          ? `request past the end of ${agent}'s script`
          : `a request no agent claims: ${JSON.stringify(body.messages[0]).slice(0, 300)}`,
      );
      return {
        kind: 'error',
        status: 400,
        message: `fake model: no step for ${agent ?? JSON.stringify(body.messages[0]).slice(0, 200)}`,
      };
    }
    received.get(agent)!.push(body);
    return step;
  };
  return {
    responder,
    /** The request bodies each agent's model calls sent, in arrival order. */
    requests: (agent: string): ChatRequestBody[] => received.get(agent) ?? [],
    assertDone(): void {
      const unused = [...queues]
        .filter(([, steps]) => steps.length > 0)
        .map(([agent, steps]) => `${agent}: ${steps.length} unused`);
      const all = [...problems, ...unused];
      if (all.length > 0) throw new Error(`fake model scripts: ${all.join('; ')}`);
    },
  };
}
