import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentRegistry } from '../../src/agents/registry';
import { fusableTools } from '../../src/runtime/batch-plan';
import {
  checkedVerdict,
  GuardrailSettings,
  judgeMessages,
  judgeVerdict,
  rewrittenArguments,
  stageChecksFor,
} from '../../src/runtime/guardrails';
import { defineGuardrail } from '../../src/tools/define-guardrail';
import { defineTool } from '../../src/tools/define-tool';

const limit = defineGuardrail({
  name: 'limit',
  stages: ['tool'],
  options: z.object({ max: z.number() }),
  check: () => ({ decision: 'allow' }),
});
const fast = defineTool({
  name: 'add',
  description: 'Adds.',
  parameters: z.object({ a: z.number() }),
  execute: ({ a }) => a,
  fast: true,
});

describe('guardrails (pure parts)', () => {
  it("reads a judge's verdict from its reply, fenced or not; anything else blocks without quoting the reply", () => {
    expect(judgeVerdict('```json\n{"decision": "allow"}\n```')).toEqual({ decision: 'allow' });
    expect(judgeVerdict('Verdict: {"decision":"rewrite","text":"[card]"}')).toEqual({
      decision: 'rewrite',
      text: '[card]',
    });
    for (const reply of ['allow', '{"decision": "block"}', '{"decision": "maybe", "reason": "x"}', '{oops}'])
      expect(judgeVerdict(reply)).toEqual({ decision: 'block', reason: "the judge's reply is not a verdict" });
    const [system, user] = judgeMessages('No poems.', {
      stage: 'tool',
      text: '{"a":1}',
      tool: { name: 'add', call_id: 'c' },
    });
    expect(system!.content).toContain('tool call an AI assistant wants to make (tool: add)');
    expect(system!.content).toContain('No poems.');
    expect(user).toEqual({ role: 'user', content: '{"a":1}' });
  });

  it('reads a code check safely: what is not a verdict blocks, naming the check', () => {
    expect(checkedVerdict('pii', { decision: 'ask', reason: 'unsure' })).toEqual({ decision: 'ask', reason: 'unsure' });
    expect(checkedVerdict('pii', undefined)).toMatchObject({
      decision: 'block',
      reason: expect.stringContaining("guardrail 'pii' returned no verdict"),
    });
    for (const value of [{ decision: 'block' }, { decision: 'block', reason: '   ' }, { decision: 'rewrite' }])
      expect(checkedVerdict('pii', value)).toMatchObject({
        decision: 'block',
        reason: expect.stringContaining("guardrail 'pii' returned no verdict"),
      });
    // A rewrite has a size: one too long to carry is no verdict.
    expect(checkedVerdict('pii', { decision: 'rewrite', text: 'x'.repeat(300_000) }).decision).toBe('block');
  });

  it('a rewrite of tool arguments must stay a JSON object', () => {
    expect(rewrittenArguments({ decision: 'rewrite', text: '{"a":2}' })).toEqual({
      decision: 'rewrite',
      text: '{"a":2}',
    });
    expect(rewrittenArguments({ decision: 'rewrite', text: '[1]' }).decision).toBe('block');
    expect(rewrittenArguments({ decision: 'rewrite', text: 'rm -rf' }).decision).toBe('block');
  });

  it("a tool stage's checks apply to the tools they name (globs), others to all", () => {
    const settings = GuardrailSettings.parse({
      tool: [{ guardrail: 'a', tools: ['ref*'] }, { guardrail: 'b' }, { judge: { rubric: 'r' }, tools: ['lookup'] }],
    });
    const names = (tool: string) =>
      stageChecksFor(settings, 'tool', tool).map((check) => ('guardrail' in check ? check.guardrail : 'judge'));
    expect(names('refund')).toEqual(['a', 'b']);
    expect(names('lookup')).toEqual(['b', 'judge']);
    expect(stageChecksFor(settings, 'output')).toEqual([]);
    expect(stageChecksFor(undefined, 'input')).toEqual([]);
  });

  it('a worker refuses an agent whose guardrails are unknown, listed at a stage they do not check, or given bad options', () => {
    const agent = (guardrails: object) => [{ name: 'a', instructions: 'x', guardrails }];
    expect(() => new AgentRegistry([], agent({ input: [{ guardrail: 'nope' }] }), [], [limit])).toThrow(
      "agent 'a': guardrails.input: 'nope' is not registered (this worker has limit)",
    );
    expect(
      () => new AgentRegistry([], agent({ output: [{ guardrail: 'limit', options: { max: 1 } }] }), [], [limit]),
    ).toThrow("agent 'a': guardrails.output: 'limit' checks tool only");
    expect(
      () => new AgentRegistry([], agent({ tool: [{ guardrail: 'limit', options: { max: 'x' } }] }), [], [limit]),
    ).toThrow(/guardrails.tool: 'limit': options: /);
    expect(
      () => new AgentRegistry([], agent({ tool: [{ guardrail: 'limit', options: { max: 1 } }] }), [], [limit]),
    ).not.toThrow();
    expect(() => defineGuardrail({ name: 'bad name', check: () => ({ decision: 'allow' }) })).toThrow(
      /a name is letters/,
    );
    expect(() => new AgentRegistry([], [], [], [limit, limit])).toThrow("guardrail 'limit' is registered twice");
  });

  it('a fast tool whose calls or results a guardrail checks is never run early with the reply', () => {
    const spec = (guardrails?: object) =>
      new AgentRegistry(
        [fast],
        [{ name: 'a', instructions: 'x', tools: ['add'], ...(guardrails ? { guardrails } : {}) }],
        [],
        [limit],
      ).describe('a', 'm');
    expect(fusableTools(spec())).toEqual(['add']);
    expect(fusableTools(spec({ tool: [{ guardrail: 'limit', options: { max: 1 }, tools: ['add'] }] }))).toEqual([]);
    expect(fusableTools(spec({ tool_result: [{ judge: { rubric: 'r' } }] }))).toEqual([]);
    expect(fusableTools(spec({ tool_result: [{ judge: { rubric: 'r' }, tools: ['other'] }] }))).toEqual(['add']);
  });
});
