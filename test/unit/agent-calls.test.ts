import { describe, expect, it } from 'vitest';
import { AgentRegistry } from '../../src/agents/registry';
import {
  relayedPending,
  routeDecision,
  subagentPrompt,
  subagentTask,
  type AgentDefinitionInput,
} from '../../src/runtime';
import { addTool } from '../../src/tools/examples';

const researcher: AgentDefinitionInput = {
  name: 'researcher',
  instructions: 'Research a question.\nCite sources.',
  tools: ['add'],
  subagents: ['helper', { agent: 'critic', tool_name: 'ask_critic', description: 'Reviews a draft.' }],
};
const helper: AgentDefinitionInput = { name: 'helper', instructions: 'Look things up.' };
const critic: AgentDefinitionInput = { name: 'critic', instructions: '' };
const triage: AgentDefinitionInput = { name: 'triage', instructions: 'Route the user.', handoffs: ['helper'] };

function registry(...agents: AgentDefinitionInput[]): AgentRegistry {
  return new AgentRegistry([addTool], agents);
}

describe('sub-agent and handoff tools', () => {
  it('are offered after the agent own tools, marked as agent calls', () => {
    const spec = registry(researcher, helper, critic, triage).describe('researcher', 'm');
    expect(spec.tool_descriptors.map((tool) => [tool.name, tool.agent_call])).toEqual([
      ['add', undefined],
      ['helper', { kind: 'subagent', agent: 'helper' }],
      ['ask_critic', { kind: 'subagent', agent: 'critic' }],
    ]);
    const helperTool = spec.tool_descriptors[1]!;
    expect(helperTool.description).toBe(
      'Ask the helper agent to do a task; returns its final answer. The agent: Look things up.',
    );
    expect(helperTool.parameters).toMatchObject({
      type: 'object',
      properties: { input: { type: 'string' }, context: { type: 'string', maxLength: 4000 } },
      required: ['input'],
      additionalProperties: false,
    });
    expect(spec.tool_descriptors[2]!.description).toBe('Reviews a draft.');
    const handoff = registry(researcher, helper, critic, triage).describe('triage', 'm').tool_descriptors[0]!;
    expect(handoff).toMatchObject({ name: 'transfer_to_helper', agent_call: { kind: 'handoff', agent: 'helper' } });
  });

  it('name agents the worker serves, never twice, never routed, and no handoff to oneself', () => {
    expect(() => registry(researcher, helper)).toThrow(
      "agent 'researcher': subagent 'critic' not among this worker's agents (researcher, helper)",
    );
    expect(() => registry({ ...triage, handoffs: ['triage'] })).toThrow("agent 'triage' hands off to itself");
    expect(() =>
      registry(
        { name: 'a', instructions: '', tools: ['add'], subagents: [{ agent: 'b', tool_name: 'add' }] },
        { name: 'b', instructions: '' },
      ),
    ).toThrow("agent 'a': tool name(s) add given twice");
    expect(() =>
      registry(
        { name: 'a', instructions: '', subagents: ['b'], tool_task_queues: { b: 'elsewhere' } },
        { name: 'b', instructions: '' },
      ),
    ).toThrow("agent 'a': tool_task_queues names b, which call agents: the workflow runs them");
    // An agent may call itself: the depth limit ends the recursion.
    expect(registry({ name: 'a', instructions: '', subagents: ['a'] }).describe('a', 'm').tools).toEqual(['a']);
    // A sub-agent call may wait for a person's decision like any tool.
    expect(
      registry(
        { name: 'a', instructions: '', subagents: ['b'], needs_approval: ['b'] },
        { name: 'b', instructions: '' },
      ).describe('a', 'm').needs_approval,
    ).toEqual(['b']);
  });

  it('read the task and the caller note from the arguments', () => {
    expect(subagentTask({ input: 'find x' })).toEqual({ input: 'find x' });
    expect(subagentTask({ input: '  ' })).toEqual({ problem: 'input: must not be empty' });
    expect(subagentTask({ task: 'x' })).toMatchObject({ problem: expect.stringContaining('input') });
    expect(subagentTask({ input: 'x', context: 'c'.repeat(4001) })).toMatchObject({
      problem: expect.stringContaining('context'),
    });
    expect(subagentPrompt({ input: 'find x', context: 'the user is in Paris' })).toBe(
      'Context from the caller:\nthe user is in Paris\n\nTask:\nfind x',
    );
    expect(subagentPrompt({ input: 'find x' })).toBe('find x');
  });
});

describe('a decision finds its run in the call tree', () => {
  const own = [{ tool_call_id: 'a', tool_name: 'add', arguments: {}, requested_at: 't' }];
  const pending = (id: string, run: string) => ({
    tool_call_id: id,
    tool_name: 'add',
    arguments: {},
    requested_at: 't',
    workflow_id: run,
    agent: 'clerk',
  });
  const children = new Map([
    ['child-1', [pending('c', 'child-1::grand'), pending('d', 'child-1')]],
    ['child-2', [pending('d', 'child-2')]],
  ]);

  it('goes to the run own call, or down to the child whose subtree waits for it', () => {
    expect(routeDecision('top', own, children, { tool_call_id: 'a', approved: true })).toEqual({
      own: { tool_call_id: 'a', approved: true },
    });
    expect(routeDecision('top', own, children, { tool_call_id: 'c', approved: false, reason: 'no' })).toEqual({
      child: 'child-1',
      decision: { tool_call_id: 'c', approved: false, reason: 'no', workflow_id: 'child-1::grand' },
    });
    expect(routeDecision('top', own, children, { tool_call_id: 'd', approved: true, workflow_id: 'child-2' })).toEqual({
      child: 'child-2',
      decision: { tool_call_id: 'd', approved: true, workflow_id: 'child-2' },
    });
  });

  it("a decided call of the run's own does not hide a sub-agent's waiting call with the same id", () => {
    const decided = [{ ...own[0]!, decision: { approved: true, by: 'update' as const } }];
    const below = new Map([['child-1', [pending('a', 'child-1')]]]);
    expect(routeDecision('top', decided, below, { tool_call_id: 'a', approved: true })).toEqual({
      child: 'child-1',
      decision: { tool_call_id: 'a', approved: true, workflow_id: 'child-1' },
    });
    expect(routeDecision('top', decided, new Map(), { tool_call_id: 'a', approved: true })).toEqual({
      refusal: "tool call 'a' was already approved",
    });
  });

  it('is refused when the id waits nowhere, or in several runs without workflow_id', () => {
    expect(routeDecision('top', own, children, { tool_call_id: 'd', approved: true })).toEqual({
      refusal: "tool call 'd' waits in several sub-agent runs: name one as workflow_id (child-1, child-2)",
    });
    expect(routeDecision('top', own, children, { tool_call_id: 'z', approved: true })).toEqual({
      refusal:
        "no tool call 'z' awaits approval (waiting: a, c (run child-1::grand), d (run child-1), d (run child-2))",
    });
    expect(
      routeDecision('top', own, children, { tool_call_id: 'c', approved: true, workflow_id: 'elsewhere' }),
    ).toEqual({
      refusal: "no tool call 'c' of run elsewhere awaits approval here",
    });
  });
});

describe('what a sub-agent run reports up is bounded', () => {
  it('keeps at most 100 entries and cuts arguments over 4 KiB to their start and size', () => {
    const entry = (id: number, text: string) => ({
      tool_call_id: `c${id}`,
      tool_name: 'write',
      arguments: { text },
      requested_at: 't',
    });
    const relayed = relayedPending([
      entry(0, 'x'.repeat(5000)),
      ...Array.from({ length: 150 }, (_, id) => entry(id + 1, 'ok')),
    ]);
    expect(relayed).toHaveLength(100);
    expect(relayed[0]!.arguments).toEqual({
      _truncated: `${JSON.stringify({ text: 'x'.repeat(5000) }).slice(0, 1000)}...`,
      _bytes: 5011,
    });
    expect(relayed[1]!.arguments).toEqual({ text: 'ok' });
  });
});
