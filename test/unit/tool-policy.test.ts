import { describe, expect, it } from 'vitest';
import { decideCall, describeSource, globMatches, ToolPolicy, type PolicyRule } from '../../src/runtime';
import { AgentDefinition } from '../../src/runtime';

const policy: PolicyRule[] = [
  { tool: 'transfer', principal: 'bob', decision: 'deny', reason: 'bob may not move money' },
  { tool: 'transfer', args: { cents: { gt: 100000 } }, decision: 'approve', reason: 'large transfers' },
  { tool: 'transfer', decision: 'allow' },
  { tool: 'delete_*', decision: 'deny' },
  { tool: 'email', args: { to: { matches: '@example\\.com$' } }, decision: 'allow' },
  { tool: 'email', decision: 'approve' },
  { tool: 'pick', args: { color: { in: ['red', 'blue'] }, size: { gte: 2, lte: 4 } }, decision: 'allow' },
  { tool: 'pick', args: { color: { ne: 'green' } }, decision: 'approve' },
  { tool: 'pick', args: { size: { eq: 9 } }, decision: 'approve' },
  { tool: 'pick', decision: 'deny' },
];
const agent = { policy, needs_approval: ['charge'] };
const decide = (tool: string, args: unknown, principal?: string) =>
  decideCall(agent, { tool, arguments: typeof args === 'string' ? args : JSON.stringify(args), principal });

describe('tool policy', () => {
  it('the first rule that matches decides: principal, then argument conditions, then the rest', () => {
    expect(decide('transfer', { cents: 5 }, 'bob')).toEqual({
      decision: 'deny',
      reason: 'bob may not move money',
      source: { rule: 0 },
    });
    expect(decide('transfer', { cents: 5 }, 'alice')).toEqual({ decision: 'allow', source: { rule: 2 } });
    expect(decide('transfer', { cents: 5 })).toEqual({ decision: 'allow', source: { rule: 2 } });
    expect(decide('transfer', { cents: 100001 }, 'alice')).toMatchObject({ decision: 'approve', source: { rule: 1 } });
    expect(decide('transfer', { cents: 100000 }, 'alice')).toMatchObject({ decision: 'allow', source: { rule: 2 } });
    expect(decide('delete_file', {})).toEqual({ decision: 'deny', source: { rule: 3 } });
    expect(decide('delete', {})).toEqual({ decision: 'allow', source: { default: true } });
  });

  it('reads arguments as the batch repairs them: a broken large transfer is still gated, not let through', () => {
    // The batch runs the tool with {"cents": 200000} (the brace closed): the policy must see the same.
    expect(decide('transfer', '{"cents": 200000', 'alice')).toMatchObject({ decision: 'approve', source: { rule: 1 } });
    expect(decide('transfer', '{{"cents": 200000}}', 'alice')).toMatchObject({
      decision: 'approve',
      source: { rule: 1 },
    });
    expect(decide('transfer', 'not json', 'alice')).toEqual({ decision: 'allow', source: { rule: 2 } });
  });

  it('conditions: matches, in, gte/lte, ne, eq; a missing or mistyped argument does not meet them', () => {
    expect(decide('email', { to: 'ann@example.com' }).decision).toBe('allow');
    expect(decide('email', { to: 'ann@example.org' }).decision).toBe('approve');
    expect(decide('email', { to: 42 }).decision).toBe('approve');
    expect(decide('pick', { color: 'red', size: 3 }).source).toEqual({ rule: 6 });
    expect(decide('pick', { color: 'red', size: 5 }).source).toEqual({ rule: 7 });
    expect(decide('pick', { color: 'green', size: 3 }).source).toEqual({ rule: 9 });
    expect(decide('pick', { color: 'green', size: 9 }).source).toEqual({ rule: 8 });
    expect(decide('pick', { size: '3' }).source).toEqual({ rule: 7 });
    // Arguments that are not a JSON object match no rule with conditions.
    expect(decide('pick', 'not json').source).toEqual({ rule: 9 });
    expect(decide('pick', '[1]').source).toEqual({ rule: 9 });
  });

  it('needs_approval is the rule after the policy: existing agent files keep working', () => {
    expect(decide('charge', { cents: 1 })).toEqual({ decision: 'approve', source: { needs_approval: true } });
    expect(decideCall({ needs_approval: ['charge'] }, { tool: 'charge', arguments: '{}' }).decision).toBe('approve');
    expect(decideCall({ needs_approval: [] }, { tool: 'charge', arguments: '{}' }).decision).toBe('allow');
    expect(describeSource(agent, { rule: 3 })).toBe('rule 4 {"tool":"delete_*","decision":"deny"}');
    expect(describeSource(agent, { needs_approval: true })).toBe('needs_approval');
  });

  it('globs: * and ? only, the rest literally', () => {
    expect(globMatches('a.b*', 'a.bc')).toBe(true);
    expect(globMatches('a.b*', 'aXbc')).toBe(false);
    expect(globMatches('t?ol', 'tool')).toBe(true);
    expect(globMatches('t?ol', 'tl')).toBe(false);
    expect(globMatches('*', 'anything')).toBe(true);
  });

  it('a policy that cannot be decided is refused when the agent is read', () => {
    expect(ToolPolicy.safeParse([{ tool: 'x', args: { a: { matches: '(' } }, decision: 'deny' }]).success).toBe(false);
    expect(ToolPolicy.safeParse([{ tool: 'x', args: { a: {} }, decision: 'deny' }]).success).toBe(false);
    expect(ToolPolicy.safeParse([{ tool: 'x', decision: 'maybe' }]).success).toBe(false);
    expect(
      AgentDefinition.safeParse({ name: 'a', instructions: '', policy: [{ tool: 'x', decision: 'deny', extra: 1 }] })
        .success,
    ).toBe(false);
    expect(AgentDefinition.parse({ name: 'a', instructions: '', policy }).policy).toHaveLength(policy.length);
  });
});
