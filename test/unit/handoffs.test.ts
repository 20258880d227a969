import { describe, expect, it } from 'vitest';
import { AgentRegistry } from '../../src/agents/registry';
import { applyMutations, compileRequestMessages, type Message } from '../../src/context';
import {
  extraHandoffMessage,
  handedOffSpec,
  handoffMutation,
  handoffReason,
  handoffResultContent,
  handoffTarget,
  promptContractFor,
  type AgentDefinitionInput,
} from '../../src/runtime';
import { addTool } from '../../src/tools/examples';

const triage: AgentDefinitionInput = {
  name: 'triage',
  instructions: 'Route the user.',
  tools: ['add'],
  handoffs: ['billing'],
  needs_approval: ['transfer_to_billing'],
  budget: { max_llm_calls: 9 },
};
const billing: AgentDefinitionInput = {
  name: 'billing',
  instructions: 'Answer billing questions.',
  model: 'billing-model',
  handoffs: [{ agent: 'triage', tool_name: 'back_to_triage' }],
  selfref: true,
};

function registry(): AgentRegistry {
  return new AgentRegistry([addTool], [triage, billing]);
}

const conversation: Message[] = [
  { role: 'system', content: 'Route the user.' },
  { role: 'user', content: 'my invoice is wrong' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'transfer_to_billing', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: handoffResultContent('billing') },
];

describe('handoffs: the pure parts', () => {
  it('a handoff tool names its agent; other tools name none', () => {
    const spec = registry().describe('triage', 'm');
    expect(handoffTarget(spec.tool_descriptors, 'transfer_to_billing')).toBe('billing');
    expect(handoffTarget(spec.tool_descriptors, 'add')).toBeUndefined();
    expect(handoffTarget(spec.tool_descriptors, 'nothing')).toBeUndefined();
    expect(handoffTarget(registry().describe('billing', 'm').tool_descriptors, 'back_to_triage')).toBe('triage');
  });

  it('reads the optional reason, and refuses other arguments', () => {
    expect(handoffReason({})).toEqual({});
    expect(handoffReason({ reason: '  an invoice  ' })).toEqual({ reason: 'an invoice' });
    expect(handoffReason({ reason: '   ' })).toEqual({});
    expect(handoffReason({ reason: 3 })).toEqual({ problem: expect.stringContaining('reason') });
    expect(handoffReason({ to: 'x' })).toEqual({ problem: expect.stringContaining('to') });
  });

  it('tells the model the transfer happened, or that a second one in the batch did not', () => {
    expect(JSON.parse(handoffResultContent('billing'))).toEqual({ handoff: 'billing', status: 'transferred' });
    expect(extraHandoffMessage({ name: 'transfer_to_billing', id: 'call_1' })).toBe(
      'only one handoff per batch: transfer_to_billing (call call_1) was carried out first, this one was not',
    );
  });

  it('switches the system prompt by a ContextReplaceMutation that keeps every other message', () => {
    const mutation = handoffMutation(conversation, 'Answer billing questions.');
    expect(mutation.type).toBe('ContextReplaceMutation');
    const after = applyMutations(conversation, [mutation]);
    expect(after).toEqual([{ role: 'system', content: 'Answer billing questions.' }, ...conversation.slice(1)]);
    // The compiled request of the new agent's contract carries its instructions.
    const spec = registry().describe('billing', 'm');
    const messages = compileRequestMessages(promptContractFor(spec), after, null);
    // As a line of its own (the tool block's description of back_to_triage quotes the other agent's).
    expect(messages[0]!['content']).toMatch(/^Answer billing questions\.$/m);
    expect(messages[0]!['content']).not.toMatch(/^Route the user\.$/m);
    expect(messages.slice(1)).toEqual(conversation.slice(1));
  });

  it('keeps the run’s SelfRef experiences in the new system message; empty instructions leave none', () => {
    const remembered = applyMutations(conversation, [{ type: 'ExperienceRememberMutation', text: 'Prefers email' }]);
    expect(remembered[0]!['content']).toContain('Prefers email');
    const after = applyMutations(remembered, [handoffMutation(remembered, 'Answer billing questions.')]);
    expect(after[0]).toEqual({
      role: 'system',
      content: 'Answer billing questions.\n\n<experience>\n- [exp_1] Prefers email\n</experience>',
    });
    expect(applyMutations(conversation, [handoffMutation(conversation, '')])).toEqual(conversation.slice(1));
  });

  it('the new spec keeps the run’s budget and context settings, and takes everything else', () => {
    const from = registry().describe('triage', 'm');
    const to = registry().describe('billing', 'm');
    const next = handedOffSpec(from, to);
    expect(next).toEqual({ ...to, budget: from.budget, context: from.context });
    expect(next.model).toBe('billing-model');
    expect(next.budget.max_llm_calls).toBe(9);
  });

  it('a gated handoff is reviewed as gated (the approval gate asks a person)', () => {
    const reg = registry();
    expect(reg.gatesAgentCall('triage', 'transfer_to_billing')).toBe(true);
    expect(reg.gatesAgentCall('billing', 'back_to_triage')).toBe(false);
    expect(reg.gatesAgentCall('triage', 'add')).toBe(false);
    expect(reg.describe('triage', 'm').needs_approval).toEqual(['transfer_to_billing']);
  });
});
