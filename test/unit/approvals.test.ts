import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentRegistry } from '../../src/agents/registry';
import {
  decisionRefusal,
  isUndecided,
  rejectedCallContent,
  ToolCallRequest,
  ToolReviewInput,
  undecidedRecords,
  type ApprovalRecord,
} from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';

const pay = defineTool({
  name: 'pay',
  description: 'pays',
  parameters: z.object({ amount: z.number() }),
  needsApproval: ({ amount }) => amount > 10,
  execute: () => 'paid',
});

describe('declaring approval', () => {
  it('refuses at worker start a needs_approval entry that is not one of the agent tools', () => {
    expect(
      () =>
        new AgentRegistry(
          [addTool],
          [{ name: 'a', instructions: '', tools: ['add'], needs_approval: ['add', 'deploy'] }],
        ),
    ).toThrow("agent 'a': needs_approval lists deploy, which is not among its tools (add)");
  });

  it('resolves the gated tools: the agent list and tools gated in code', () => {
    const registry = new AgentRegistry(
      [addTool, pay],
      [
        { name: 'listed', instructions: '', tools: ['add', 'pay'], needs_approval: ['add'] },
        { name: 'plain', instructions: '', tools: ['add'] },
      ],
    );
    expect(registry.describe('listed', 'm').needs_approval).toEqual(['add', 'pay']);
    expect(registry.describe('plain', 'm').needs_approval).toEqual([]);
  });
});

describe('deciding', () => {
  const records: ApprovalRecord[] = [
    { tool_call_id: 'c1', tool_name: 'pay', arguments: {}, requested_at: '2026-12-01T00:00:00.000Z' },
    {
      tool_call_id: 'c2',
      tool_name: 'pay',
      arguments: {},
      requested_at: '2026-12-01T00:00:00.000Z',
      decision: { approved: false, reason: 'no', by: 'update' },
    },
  ];

  it('accepts a decision on a waiting call', () => {
    expect(decisionRefusal(records, { tool_call_id: 'c1', approved: true })).toEqual({
      decision: { tool_call_id: 'c1', approved: true },
    });
  });

  it.each([
    [{ tool_call_id: 'c9', approved: true }, "no tool call 'c9' awaits approval (waiting: c1)"],
    [{ tool_call_id: 'c2', approved: true }, "tool call 'c2' was already rejected"],
    [
      { tool_call_id: 'c1' },
      'expected {"tool_call_id": string, "approved": boolean, "reason"?: string, "workflow_id"?: string}',
    ],
    [{ tool_call_id: 'c1', approved: true, extra: 1 }, 'expected {"tool_call_id"'],
    ['c1', 'expected {"tool_call_id"'],
  ])('refuses %j', (payload, refusal) => {
    const outcome = decisionRefusal(records, payload);
    expect('refusal' in outcome && outcome.refusal).toContain(refusal);
  });

  it('has one test of an undecided approval: a record without a decision', () => {
    expect(records.map(isUndecided)).toEqual([true, false]);
    expect(undecidedRecords(records)).toEqual([records[0]]);
  });

  it('tells the model who rejected the call and why', () => {
    expect(rejectedCallContent('pay', 'too much')).toBe(
      '<Tool call rejected by the approver. Tool: pay. Reason: too much>',
    );
    expect(rejectedCallContent('pay', undefined)).toBe('<Tool call rejected by the approver. Tool: pay.>');
  });
});

describe('the review of gated calls', () => {
  it('takes the calls as the batch has them: one call type, ToolCallRequest', () => {
    expect(ToolReviewInput.shape.calls.element).toBe(ToolCallRequest);
    const call = { id: 'c1', name: 'pay', arguments: '{"amount": 5}' };
    expect(ToolReviewInput.parse({ agent: 'a', iteration: 0, calls: [call], run_chain_id: 'r' }).calls).toEqual([call]);
  });
});
