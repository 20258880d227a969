import { describe, expect, it } from 'vitest';
import {
  AgentDefinition,
  AgentSpec,
  DEFAULT_BUDGET_LIMITS,
  exhaustedSummary,
  NO_BOUNDS,
  BudgetExtension,
  BudgetOverride,
  effectiveBudget,
  BudgetSettings,
  budgetProblem,
  costOf,
  emptyUsageLedger,
  exceededLimits,
  extendLedger,
  recordCall,
  recordChildUsage,
  remainingBudget,
  spentOf,
} from '../../src/runtime';

const call = { input_tokens: 1000, output_tokens: 200, llm_calls: 1 };
const nothing = { input_tokens: 0, output_tokens: 0, llm_calls: 0 };

describe('budgets are checked before a step, with its estimate', () => {
  it('each limit kind stops the step that would pass it, not the one that reaches it', () => {
    const ledger = recordCall(
      emptyUsageLedger(),
      { prompt_tokens: 4000, completion_tokens: 500, total_tokens: 4500 },
      null,
    );
    const cases: Array<[Partial<BudgetSettings>, string[]]> = [
      [{ max_total_tokens: 5700 }, []],
      [{ max_total_tokens: 5699 }, ['max_total_tokens']],
      [{ max_input_tokens: 4999 }, ['max_input_tokens']],
      [{ max_output_tokens: 699 }, ['max_output_tokens']],
      [{ max_llm_calls: 2 }, []],
      [{ max_llm_calls: 1 }, ['max_llm_calls']],
    ];
    for (const [limits, exceeded] of cases)
      expect(exceededLimits(BudgetSettings.parse(limits), ledger, 0, call)).toEqual(exceeded);
  });

  it("counts cost at the agent's prices, cached input at its own price", () => {
    const prices = { input_per_million: 2.5, cached_input_per_million: 1.25, output_per_million: 10 };
    expect(
      costOf({ prompt_tokens: 1_000_000, completion_tokens: 100_000, cached_prompt_tokens: 400_000 }, prices),
    ).toBeCloseTo(0.6 * 2.5 + 0.4 * 1.25 + 1);
    const settings = BudgetSettings.parse({ max_cost_usd: 0.01, prices });
    const ledger = recordCall(
      emptyUsageLedger(),
      { prompt_tokens: 3000, completion_tokens: 100, total_tokens: 3100 },
      prices,
    );
    expect(ledger.cost_usd).toBeCloseTo(0.0085);
    expect(exceededLimits(settings, ledger, 0, call)).toEqual(['max_cost_usd']);
    expect(budgetProblem(BudgetSettings.parse({ max_cost_usd: 1 }))).toMatch(/needs budget.prices/);
  });

  it('wall time stops any step once it has run out, a tool batch too', () => {
    const ledger = { ...emptyUsageLedger(), started_at_ms: 1_000 };
    const settings = BudgetSettings.parse({ max_wall_seconds: 60 });
    expect(exceededLimits(settings, ledger, 60_999, nothing)).toEqual([]);
    expect(exceededLimits(settings, ledger, 61_000, nothing)).toEqual(['max_wall_seconds']);
    expect(spentOf(ledger, 61_000).max_wall_seconds).toBe(60);
  });

  it('an extension raises the limits it names, and only those', () => {
    const settings = BudgetSettings.parse({ max_total_tokens: 1000, max_llm_calls: 1 });
    const ledger = recordCall(
      emptyUsageLedger(),
      { prompt_tokens: 900, completion_tokens: 50, total_tokens: 950 },
      null,
    );
    expect(exceededLimits(settings, ledger, 0, call)).toEqual(['max_total_tokens', 'max_llm_calls']);
    const extended = extendLedger(ledger, BudgetExtension.parse({ tokens: 5000 }));
    expect(exceededLimits(settings, extended, 0, call)).toEqual(['max_llm_calls']);
    expect(() => BudgetExtension.parse({})).toThrow(/at least one/);
  });

  it("a run's override changes only the fields it names: the agent's prices, other limits and mode stay", () => {
    const agent = BudgetSettings.parse({
      max_cost_usd: 5,
      prices: { input_per_million: 1, output_per_million: 2 },
      on_exhausted: 'ask',
    });
    expect(BudgetOverride.parse({ max_llm_calls: 50 })).toEqual({ max_llm_calls: 50 });
    expect(effectiveBudget(agent, BudgetOverride.parse({ max_llm_calls: 50 }))).toEqual({
      ...agent,
      max_llm_calls: 50,
    });
    expect(budgetProblem(effectiveBudget(agent, BudgetOverride.parse({ max_cost_usd: 1 })))).toBeNull();
  });
});

describe('every run is bounded by default', () => {
  const spent = (calls: number, tokens: number) =>
    Array.from({ length: calls }).reduce<ReturnType<typeof emptyUsageLedger>>(
      (ledger) =>
        recordCall(ledger, { prompt_tokens: tokens / calls, completion_tokens: 0, total_tokens: tokens / calls }, null),
      emptyUsageLedger(),
    );

  it('an agent that sets no budget gets the default bounds: the call after the hundredth, or past a million tokens, is not made', () => {
    const agent = AgentDefinition.parse({ name: 'a', instructions: '' });
    expect(agent.budget).toMatchObject(DEFAULT_BUDGET_LIMITS);
    expect(exceededLimits(agent.budget, spent(99, 1000), 0, call)).toEqual([]);
    expect(exceededLimits(agent.budget, spent(100, 1000), 0, call)).toEqual(['max_llm_calls']);
    expect(exceededLimits(agent.budget, spent(10, 999_000), 0, call)).toEqual(['max_total_tokens']);
  });

  it("null lifts a bound, in the agent or in a run's override; a spec recorded before budgets has none", () => {
    const lifted = AgentDefinition.parse({ name: 'a', instructions: '', budget: NO_BOUNDS }).budget;
    expect(exceededLimits(lifted, spent(5000, 50_000_000), 0, call)).toEqual([]);
    const bounded = AgentDefinition.parse({ name: 'a', instructions: '' }).budget;
    expect(exceededLimits(effectiveBudget(bounded, { max_llm_calls: null }), spent(500, 1000), 0, call)).toEqual([]);
    expect(exceededLimits(effectiveBudget(bounded, { max_llm_calls: 3 }), spent(3, 1000), 0, call)).toEqual([
      'max_llm_calls',
    ]);
    const recorded = AgentSpec.parse({ name: 'a', instructions: '', model: 'm', tool_descriptors: [] });
    expect(recorded.budget).toMatchObject(NO_BOUNDS);
  });

  it('a run stopped by a bound says which, and whether it was the default', () => {
    const report = (limit: number) => ({
      limit: { max_llm_calls: limit, max_total_tokens: 1_000_000 },
      spent: { max_llm_calls: limit, max_total_tokens: 1234 },
      exceeded: ['max_llm_calls'],
    });
    expect(exhaustedSummary(report(100))).toBe(
      'budget exhausted: max_llm_calls (100 of 100, the default bound) reached; spent {"max_llm_calls":100,"max_total_tokens":1234}. Raise a bound in the agent\'s "budget" or the run\'s input (null: none), see docs/budgets.md',
    );
    expect(exhaustedSummary(report(3))).toMatch(/^budget exhausted: max_llm_calls \(3 of 3\) reached;/);
  });
});

describe('a fork child spends from what its parent has left', () => {
  it("each limit is what is left (at least a token), never waiting; the child's tokens count for the parent", () => {
    const parent = BudgetSettings.parse({ max_total_tokens: 10_000, max_llm_calls: 5, on_exhausted: 'ask' });
    const ledger = recordCall(
      emptyUsageLedger(),
      { prompt_tokens: 9_000, completion_tokens: 500, total_tokens: 9_500 },
      null,
    );
    expect(remainingBudget(parent, ledger, 0)).toMatchObject({
      max_total_tokens: 500,
      max_llm_calls: 4,
      on_exhausted: 'stop',
    });
    const spent = recordChildUsage(ledger, { prompt_tokens: 700, completion_tokens: 100, total_tokens: 800 }, null);
    expect(spentOf(spent, 0)).toMatchObject({ max_total_tokens: 10_300, max_llm_calls: 1 });
    expect(remainingBudget(parent, spent, 0).max_total_tokens).toBe(1);
  });

  it('children started together share what is left (wall time aside: they run at once); a sub-agent charges its calls', () => {
    const parent = BudgetSettings.parse({ max_llm_calls: 10, max_cost_usd: 1, max_wall_seconds: 60 });
    const ledger = { ...recordCall(emptyUsageLedger(), null, null), cost_usd: 0.2, started_at_ms: 0 };
    expect(remainingBudget(parent, ledger, 10_000, 2)).toMatchObject({
      max_llm_calls: 4,
      max_cost_usd: 0.4,
      max_wall_seconds: 50,
    });
    expect(remainingBudget(parent, ledger, 10_000, 20).max_llm_calls).toBe(1);
    expect(recordChildUsage(ledger, null, null, 3).llm_calls).toBe(4);
  });
});
