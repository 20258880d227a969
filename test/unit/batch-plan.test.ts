import { describe, expect, it } from 'vitest';
import {
  fusableTools,
  fusedCalls,
  mergeInDeclaredOrder,
  planBatch,
  type ToolBatchResult,
  type ToolCallRequest,
  type ToolDescriptor,
} from '../../src/runtime';

const tool = (name: string, extra: Partial<ToolDescriptor> = {}): ToolDescriptor => ({
  name,
  description: name,
  parameters: { type: 'object' },
  best_practices: [],
  ...extra,
});

const agent = {
  selfref: true,
  tool_descriptors: [
    tool('add', { fast: true }),
    tool('charge'),
    tool('render'),
    tool('research', { agent_call: { kind: 'subagent', agent: 'researcher' } }),
    tool('transfer', { agent_call: { kind: 'handoff', agent: 'billing' } }),
    tool('lookup', { mcp: { server: 'docs', tool: 'lookup' } }),
  ],
  tool_task_queues: { render: 'gpu' },
};

const call = (id: string, name: string): ToolCallRequest => ({ id, name, arguments: '{}' });

function result(calls: ToolCallRequest[], contents: string[], extra: Partial<ToolBatchResult> = {}): ToolBatchResult {
  return {
    outcome: 'completed',
    mutations: calls.map((entry, index) => ({
      type: 'ToolResultMutation',
      tool_call_id: entry.id,
      content: contents[index]!,
    })),
    reports: [],
    unfinished: [],
    intents: [],
    ...extra,
  };
}

describe('the plan of a tool batch', () => {
  it('routes each call: rejected, fork, sub-agent, handoff, or an activity on its queue', () => {
    const calls = [
      call('a', 'add'),
      call('b', 'render'),
      call('c', 'selfref_fork'),
      call('d', 'research'),
      call('e', 'transfer'),
      call('f', 'charge'),
      call('g', 'lookup'),
    ];
    const plan = planBatch(agent, calls, (entry) => entry.id === 'f');
    expect(plan.routes).toEqual([
      { kind: 'activity', queue: undefined },
      { kind: 'activity', queue: 'gpu' },
      { kind: 'fork' },
      { kind: 'subagent', agent: 'researcher' },
      { kind: 'handoff' },
      { kind: 'rejected' },
      { kind: 'activity', queue: undefined },
    ]);
    expect(plan.groups).toEqual([
      // Not all fast (lookup is not): a plain activity, with the MCP tool's server.
      {
        queue: undefined,
        calls: [calls[0], calls[6]],
        local: false,
        mcp_tools: { lookup: { server: 'docs', tool: 'lookup' } },
      },
      { queue: 'gpu', calls: [calls[1]], local: false },
    ]);
    expect(plan.activityCalls).toEqual([calls[0], calls[1], calls[6]]);
    expect(plan.handoffs).toEqual([calls[4]]);
    expect(plan.subagents).toBe(1);
  });

  it('runs a batch of fast tools on its own queue as a local activity; a fork is a tool without SelfRef', () => {
    const plan = planBatch({ ...agent, selfref: false }, [call('a', 'add'), call('b', 'add')], () => false);
    expect(plan.groups).toEqual([{ queue: undefined, calls: [call('a', 'add'), call('b', 'add')], local: true }]);
    expect(planBatch({ ...agent, selfref: false }, [call('c', 'selfref_fork')], () => false).routes).toEqual([
      { kind: 'activity', queue: undefined },
    ]);
  });
});

describe('fast tools the model call runs with its reply', () => {
  const fastAgent = {
    selfref: true,
    needs_approval: ['approve_me'],
    tool_descriptors: [
      tool('add', { fast: true }),
      tool('repeat', { fast: true }),
      tool('approve_me', { fast: true }),
      tool('routed', { fast: true }),
      tool('charge'),
      tool('nap', { fast: true, durable_wait: 'sleep' }),
      tool('research', { fast: true, agent_call: { kind: 'subagent', agent: 'researcher' } }),
      tool('lookup', { fast: true, mcp: { server: 'docs', tool: 'lookup' } }),
      tool('selfref_fork', { fast: true }),
    ],
    tool_task_queues: { routed: 'elsewhere' },
  };

  it('are the fast tools a local batch would run with nothing to decide first', () => {
    expect(fusableTools(fastAgent)).toEqual(['add', 'repeat']);
    // Each of those would run as one local activity: the same rule as the plan's.
    const plan = planBatch(fastAgent, [call('a', 'add'), call('r', 'repeat')], () => false);
    expect(plan.groups).toEqual([{ queue: undefined, calls: [call('a', 'add'), call('r', 'repeat')], local: true }]);
  });

  it('run only when every call is one of them, within the budget left', () => {
    const fast = { names: ['add', 'repeat'], max_calls: 2 };
    expect(fusedCalls(fast, [call('a', 'add'), call('r', 'repeat')])).toBe(true);
    expect(fusedCalls(fast, [])).toBe(false);
    expect(fusedCalls(fast, [call('a', 'add'), call('c', 'charge')])).toBe(false);
    expect(fusedCalls(fast, [call('a', 'add'), call('b', 'add'), call('c', 'add')])).toBe(false);
    expect(fusedCalls({ ...fast, max_calls: null }, [call('a', 'add'), call('b', 'add'), call('c', 'add')])).toBe(true);
    expect(fusedCalls({ ...fast, max_calls: 0 }, [call('a', 'add')])).toBe(false);
  });
});

describe('the one merge of a batch in declared order', () => {
  it('gives each call its own result when a provider repeats an id across queues', () => {
    const calls = [call('x', 'add'), call('x', 'render'), call('x', 'add')];
    const merged = mergeInDeclaredOrder(
      calls,
      [
        { calls: [calls[0]!, calls[2]!], result: result([calls[0]!, calls[2]!], ['2', '4']) },
        { calls: [calls[1]!], result: result([calls[1]!], ['rendered']) },
      ],
      [],
      [],
    );
    expect(merged.mutations.map((mutation) => ('content' in mutation ? mutation.content : null))).toEqual([
      '2',
      'rendered',
      '4',
    ]);
    expect(merged.outcome).toBe('completed');
  });

  it("puts the workflow's own results in place, cancels a call the activity left without one, and multimodal results last", () => {
    const calls = [call('a', 'render'), call('b', 'research'), call('c', 'add')];
    // The activity returned the render's image and nothing for the addition (it was still running).
    const activity: ToolBatchResult = {
      ...result([], []),
      mutations: [
        {
          type: 'MultimodalToolResultMutation',
          tool_call_id: 'a',
          tool_name: 'render',
          arguments: '{}',
          user_messages: [],
        },
      ],
    };
    const merged = mergeInDeclaredOrder(
      calls,
      [{ calls: [calls[0]!, calls[2]!], result: activity }],
      [
        {
          call: calls[1]!,
          content: 'found it',
          report: { tool_call_id: 'b', tool_name: 'research', success: true, duration_ms: 5 },
        },
      ],
      [],
    );
    expect(
      merged.mutations.map((mutation) => [mutation.type, 'tool_call_id' in mutation && mutation.tool_call_id]),
    ).toEqual([
      ['ToolResultMutation', 'b'],
      ['ToolCancelledMutation', 'c'],
      ['MultimodalToolResultMutation', 'a'],
    ]);
    expect(merged.unfinished).toEqual(['c']);
    expect(merged.outcome).toBe('aborted');
  });
});
