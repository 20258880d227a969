import { describe, expect, it } from 'vitest';
import {
  CHARGED_FIRES_KEPT,
  charged,
  fireRunBudget,
  runSpending,
  ScheduleDefinition,
  ScheduledFireInput,
  scheduleExhausted,
} from '../../src/runtime/schedule';

const fire = ScheduledFireInput.parse({
  schedule_id: 'q:nightly',
  definition: {
    name: 'nightly',
    agent: 'a',
    input: 'go',
    every: '1h',
    budget: { max_total_tokens: 1000, max_llm_calls: 4 },
  },
});

describe("a schedule's budget across its fires", () => {
  it("gives a run what is left, or its agent's own limit when lower", () => {
    const spent = { total_tokens: 700, llm_calls: 1 };
    expect(fireRunBudget(fire.definition.budget!, spent, { max_total_tokens: 1_000_000, max_llm_calls: 2 })).toEqual({
      max_total_tokens: 300,
      max_llm_calls: 2,
    });
    // A limit the schedule does not set is the agent's own.
    expect(fireRunBudget({ max_llm_calls: 3 }, spent, { max_total_tokens: 50, max_llm_calls: null })).toEqual({
      max_llm_calls: 2,
    });
  });

  it('is exhausted once a limit is reached, and says which', () => {
    expect(scheduleExhausted(fire.definition.budget!, { total_tokens: 999, llm_calls: 3 })).toBeUndefined();
    expect(scheduleExhausted(fire.definition.budget!, { total_tokens: 1200, llm_calls: 4 })).toBe(
      'schedule budget exhausted: its runs spent 1200 of 1000 tokens and 4 of 4 model calls',
    );
  });

  it('charges a fire once, and remembers a bounded number of fires', () => {
    const once = charged(fire, 'f1', { total_tokens: 10, llm_calls: 1 });
    expect(charged(once, 'f1', { total_tokens: 10, llm_calls: 1 })).toBe(once);
    expect(once.spent).toEqual({ total_tokens: 10, llm_calls: 1 });
    let many = once;
    for (let index = 2; index <= CHARGED_FIRES_KEPT + 5; index += 1)
      many = charged(many, `f${index}`, { total_tokens: 1, llm_calls: 0 });
    expect(many.charged).toHaveLength(CHARGED_FIRES_KEPT);
    expect(many.charged.at(-1)).toBe(`f${CHARGED_FIRES_KEPT + 5}`);
  });

  it("counts what a failed run spent from its failure's details", () => {
    expect(runSpending({ failed: { usage: null, llm_calls: 2 } })).toEqual({ total_tokens: 0, llm_calls: 2 });
    expect(runSpending({ failed: undefined })).toEqual({ total_tokens: 0, llm_calls: 0 });
  });
});

describe('a schedule definition', () => {
  it('takes exactly one of cron, every, at; an agent or a session; no budget with a session', () => {
    const problems = (input: unknown) => {
      const parsed = ScheduleDefinition.safeParse(input);
      return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
    };
    expect(problems({ name: 'x', agent: 'a', input: 'i', every: '30s' })).toEqual([]);
    expect(problems({ name: 'x', agent: 'a', input: 'i' })).toEqual(['a schedule has exactly one of cron, every, at']);
    expect(problems({ name: 'x', agent: 'a', input: 'i', every: '500ms' })).toEqual(['every: at least 1s']);
    expect(problems({ name: 'x', agent: 'a', input: 'i', every: '5 min' })).toEqual([
      'every: a whole number and a unit: 500ms, 30s, 5m, 2h, 1d',
    ]);
    expect(problems({ name: 'a:b', agent: 'a', input: 'i', cron: '@daily' })).toEqual([
      'a schedule name is 1 to 100 letters, digits, _ . -',
    ]);
    expect(problems({ name: 'x', input: 'i', cron: '@daily' })).toEqual([
      'a schedule names an agent (or a session to message)',
    ]);
    expect(problems({ name: 'x', session: 's', input: 'i', cron: '@daily', budget: { max_llm_calls: 1 } })).toEqual([
      "a schedule that messages a session has no budget of its own: the session's budget bounds it",
    ]);
    expect(ScheduleDefinition.parse({ name: 'x', agent: 'a', input: 'i', at: '2030-01-01T00:00:00Z' })).toEqual({
      name: 'x',
      agent: 'a',
      input: 'i',
      at: '2030-01-01T00:00:00Z',
      overlap: 'skip',
      catchup_window: '5m',
      jitter: '0s',
    });
  });
});
