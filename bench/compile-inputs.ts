import type { Message, Mutation, PromptContract, SelfRefSnapshot } from '../src/context';

/** Deterministic, realistic compile inputs: a ReAct transcript and the patches of the next iterations. */

const toolSpecs = ['add', 'wait', 'repeat'].map((name) => ({
  name,
  description: `The ${name} tool.`,
  best_practices: [`Call ${name} only when needed.`],
  prompt_injections: [],
}));

export const benchmarkContract: PromptContract = {
  base_instruction: 'You are a careful assistant.',
  system_prompt: 'You are a careful assistant.',
  tool_prompt_specs: toolSpecs,
  include_must_principles: true,
};

function sentence(index: number): string {
  return `Step ${index}: the quick brown fox jumps over the lazy dog while checking result number ${index * 7}.`;
}

/** `size` messages: system, user, then rounds of assistant tool call + result + assistant text. */
export function benchmarkTranscript(size: number, systemContent = 'You are a careful assistant.'): Message[] {
  const messages: Message[] = [
    { role: 'system', content: systemContent },
    { role: 'user', content: sentence(0) },
  ];
  let round = 0;
  while (messages.length < size) {
    round += 1;
    const id = `call_${round}`;
    if (messages.length + 3 <= size) {
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id, type: 'function', function: { name: 'add', arguments: `{"a": ${round}, "b": 2}` } }],
        },
        { role: 'tool', tool_call_id: id, content: String(round + 2) },
        { role: 'assistant', content: sentence(round) },
      );
    } else {
      messages.push({ role: 'user', content: sentence(round) });
    }
  }
  return messages;
}

/** `count` pending patches as the loop produces them: tool-call rounds, a user message, one remember. */
export function benchmarkMutations(count: number, withRemember: boolean): Mutation[] {
  const mutations: Mutation[] = [];
  let round = 0;
  while (mutations.length < count) {
    round += 1;
    const left = count - mutations.length;
    if (withRemember && left === 1) {
      mutations.push({ type: 'ExperienceRememberMutation', text: 'Prefer exact arithmetic.' });
    } else if (left >= 2) {
      const id = `pending_${round}`;
      mutations.push(
        {
          type: 'AssistantMessageMutation',
          content: null,
          tool_calls: [{ id, type: 'function', function: { name: 'add', arguments: '{"a": 1, "b": 2}' } }],
        },
        { type: 'ToolResultMutation', tool_call_id: id, content: '3' },
      );
    } else {
      mutations.push({ type: 'UserMessageMutation', message: { role: 'user', content: sentence(round) } });
    }
  }
  return mutations;
}

export function benchmarkSnapshot(): SelfRefSnapshot {
  return {
    base_system_prompt: 'You are a careful assistant.',
    experiences: [],
    summary: null,
    summary_message: null,
    working_messages: [],
  };
}
