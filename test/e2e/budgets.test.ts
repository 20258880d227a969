import { describe, expect } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import type { RunHandle } from '../../src/client/patchloop-client';
import { DEFAULT_BUDGET_LIMITS, type AgentRunResult, type BudgetOverride } from '../../src/runtime';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { pageReader } from '../../support/context-model';
import { tools } from '../support/context-tools';
import { listedWorkflows, temporalCli } from '../support/temporal';
import { eventually } from '../support/wait';
import { runCli } from '../support/cli';

const TASK = 'Read the report, one page per call, and tell me how many pages you read.';
const prices = { input_per_million: 2.5, cached_input_per_million: null, output_per_million: 10 };

async function readerWorld(startWorld: StartWorld, responderDelayMs = 0) {
  const read = pageReader(40, 1);
  const world = await startWorld({
    fake: {
      responder: (body, index) => {
        const step = read(body, index);
        return responderDelayMs > 0 && step.kind === 'reply' ? { ...step, firstChunkDelayMs: responderDelayMs } : step;
      },
    },
    agents: [
      { name: 'reader', instructions: 'You read reports.', tools: ['read_page'], llm_options: { max_tokens: 40 } },
    ],
    tools,
  });
  return world;
}

/** Waits until the run waits for an extension of its budget. */
function awaitingBudget(handle: RunHandle): Promise<true> {
  return eventually(async () => ((await handle.status()).state === 'awaiting_budget' ? true : undefined));
}

/** A run stopped by its budget: valid transcript, the result's account, and nothing sent past the limit. */
function expectStopped(result: AgentRunResult, exceeded: string[]): void {
  expect(result.status).toBe('budget_exhausted');
  expect(result.answer).toBeNull();
  validateToolLinkage(result.transcript);
  expect(result.budget?.exceeded).toEqual(exceeded);
  for (const name of exceeded) expect(result.budget!.spent[name]!).toBeLessThanOrEqual(result.budget!.limit[name]!);
}

describe('budgets stop a run before a step it cannot afford', () => {
  it('each limit kind: calls, total, input and output tokens, cost, wall time', async ({ startWorld }) => {
    const world = await readerWorld(startWorld);
    const run = (budget: BudgetOverride) =>
      world.client.start({ agent: 'reader', input: TASK, budget }).then((handle) => handle.result());
    const before = () => world.fake.requests.length;

    let sent = before();
    expectStopped(await run({ max_llm_calls: 3 }), ['max_llm_calls']);
    expect(world.fake.requests.length - sent).toBe(3);

    sent = before();
    const total = await run({ max_total_tokens: 3000 });
    expectStopped(total, ['max_total_tokens']);
    expect(total.usage!.total_tokens).toBeLessThanOrEqual(3000);
    // What the provider was sent is what the run counted: no call started past the limit.
    const answered = world.fake.requests.slice(sent);
    expect(answered.reduce((sum, request) => sum + request.promptTokens, 0)).toBe(total.usage!.prompt_tokens);

    expectStopped(await run({ max_input_tokens: 2000 }), ['max_input_tokens']);
    // Each call reserves its max_tokens (40) of output before it starts.
    const output = await run({ max_output_tokens: 100 });
    expectStopped(output, ['max_output_tokens']);
    expect(output.usage!.completion_tokens).toBeLessThanOrEqual(100);

    const cost = await run({ max_cost_usd: 0.005, prices });
    expectStopped(cost, ['max_cost_usd']);
    const dollars = (cost.usage!.prompt_tokens * 2.5 + cost.usage!.completion_tokens * 10) / 1e6;
    expect(cost.budget!.spent['max_cost_usd']).toBeCloseTo(dollars, 6);
    expect(dollars).toBeLessThanOrEqual(0.005);
  });

  it('wall time: a run past max_wall_seconds stops at its next step', async ({ startWorld }) => {
    const world = await readerWorld(startWorld, 400);
    const handle = await world.client.start({ agent: 'reader', input: TASK, budget: { max_wall_seconds: 2 } });
    const result = await handle.result();
    expectStopped(result, ['max_wall_seconds']);
    expect(result.budget!.spent['max_wall_seconds']).toBeGreaterThanOrEqual(2);
  });

  it('a bad budget is refused at run start, naming the field', async ({ startWorld }) => {
    const world = await readerWorld(startWorld);
    const handle = await world.client.start({ agent: 'reader', input: TASK, budget: { max_cost_usd: 1 } });
    await expect(handle.result()).rejects.toThrow(/budget.max_cost_usd needs budget.prices/);
    expect(world.fake.requests).toHaveLength(0);
  });

  it('ask: the run waits (awaiting_budget) for extend_budget, from the client or the temporal CLI, then goes on', async ({
    startWorld,
  }) => {
    const world = await readerWorld(startWorld);
    const handle = await world.client.start({
      agent: 'reader',
      input: TASK,
      budget: { max_llm_calls: 2, on_exhausted: 'ask' },
    });
    await awaitingBudget(handle);
    const waiting = await handle.status();
    expect(waiting.budget?.awaiting).toEqual(['max_llm_calls']);
    expect(world.fake.requests).toHaveLength(2);
    // The search attribute says so too.
    await eventually(async () =>
      (await listedWorkflows(`WorkflowId = '${handle.workflowId}' AND PatchloopStatus = 'awaiting_budget'`)).length ===
      1
        ? true
        : undefined,
    );
    expect(await handle.extendBudget({ llm_calls: 3 })).toMatchObject({ max_llm_calls: 5 });
    await eventually(async () => ((await handle.status()).budget?.awaiting ? true : undefined));
    expect(world.fake.requests).toHaveLength(5);
    // The CLI, as a person would: show says why the run waits, budget extend lets it go on.
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const show = await runCli(['show', handle.workflowId], env);
    expect(show.stdout).toContain('awaiting_budget');
    expect(show.stdout).toMatch(
      /budget: total_tokens \d+ \/ 1000000, llm_calls 5 \/ 5 \(waiting for an extension: max_llm_calls\)/,
    );
    // What it does now is the wait, not its last model call.
    expect(show.stdout).toContain('\nnow: waiting for a budget extension (max_llm_calls reached)\n');
    const extended = await runCli(['budget', 'extend', handle.workflowId, '--calls', '2', '--json'], env);
    expect(JSON.parse(extended.stdout)).toMatchObject({ limit: { max_llm_calls: 7 } });
    await eventually(async () =>
      (await handle.status()).budget?.awaiting && world.fake.requests.length === 7 ? true : undefined,
    );
    const cli = await temporalCli(
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      handle.workflowId,
      '--name',
      'extend_budget',
      '--input',
      '{"llm_calls": 100}',
    );
    expect(cli.stderr).toBe('');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('I read all 40 pages.');
    expect(result.budget).toMatchObject({ limit: { max_llm_calls: 107 }, spent: { max_llm_calls: 41 }, exceeded: [] });
    await expect(handle.extendBudget({ tokens: 10 })).rejects.toThrow(/completed/);
  });

  it('ask: an abort while waiting ends the run aborted, its transcript valid', async ({ startWorld }) => {
    const world = await readerWorld(startWorld);
    const handle = await world.client.start({
      agent: 'reader',
      input: TASK,
      budget: { max_llm_calls: 3, on_exhausted: 'ask' },
    });
    await awaitingBudget(handle);
    await handle.abort('too expensive');
    const result = await handle.result();
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('too expensive');
    validateToolLinkage(result.transcript);
    expect(world.fake.requests).toHaveLength(3);
  });

  it('the ledger survives continue-as-new: max_llm_calls counts across the whole chain', async ({ startWorld }) => {
    const world = await readerWorld(startWorld);
    const handle = await world.client.start({
      agent: 'reader',
      input: TASK,
      budget: { max_llm_calls: 12 },
      continue_as_new: { max_history_events: 60 },
    });
    const result = await handle.result();
    expectStopped(result, ['max_llm_calls']);
    expect(world.fake.requests).toHaveLength(12);
    const continued = (await handle.status()) as unknown as { continued_as_new: number };
    expect(continued.continued_as_new).toBeGreaterThan(0);
  });

  it('a session: a turn past the budget answers budget_exhausted, and an extension lets the next turn run', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { script: [reply('one'), reply('two'), reply('three')] },
      agents: [{ name: 'chat', instructions: 'Chat.', tools: [] }],
    });
    // Continuing as new after every turn: the session's own budget and its ledger go on with it.
    const session = await world.client.startSession({
      agent: 'chat',
      budget: { max_llm_calls: 2 },
      continue_as_new: { max_history_events: 10 },
    });
    expect((await session.send('a')).reply).toBe('one');
    expect((await session.send('b')).reply).toBe('two');
    expect(await session.send('c')).toMatchObject({ status: 'budget_exhausted', reply: null });
    expect(Number((await session.status())['continued_as_new' as never])).toBeGreaterThan(0);
    await session.extendBudget({ llm_calls: 1 });
    expect(await session.send('d')).toMatchObject({ status: 'completed', reply: 'three' });
    world.fake.assertDone();
  });

  it("a fork child spends from its parent's budget: it gets what is left, and its tokens count for the parent", async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents: [{ name: 'memo', instructions: 'Delegate.', tools: ['add'], selfref: true }],
      fake: {
        script: [
          callTools([{ id: 'fk', name: 'selfref_fork', arguments: '{"message": "compute 2 + 2"}' }]),
          // The child may make one call of the three its parent has left: its tool call is its last step.
          callTools([{ id: 'child_add', name: 'add', arguments: '{"a": 2, "b": 2}' }]),
          reply('The fork ran out of budget.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'delegate the sum', budget: { max_llm_calls: 2 } });
    const result = await run.result();
    expect(result.answer).toBe('The fork ran out of budget.');
    const child = await world.client.run(`${run.workflowId}::fork::1`).result();
    expect(child.status).toBe('budget_exhausted');
    expect(child.budget).toMatchObject({ limit: { max_llm_calls: 1 }, exceeded: ['max_llm_calls'] });
    // The parent's ledger holds its own two calls and the child's tokens.
    const childTokens = child.usage!.total_tokens;
    expect(result.budget!.spent['max_llm_calls']).toBe(2);
    expect(result.budget!.spent['max_total_tokens']).toBe(result.usage!.total_tokens + childTokens);
    world.fake.assertDone();
  });
});

describe('a run is bounded out of the box', () => {
  /** A model that never stops calling a tool: every reply asks for another sum. */
  const looping = {
    responder: (_body: unknown, index: number) => callTools([toolCall(`call_${index}`, 'add', { a: index, b: 1 })]),
  };

  it('a looping agent on default settings ends budget_exhausted at the default bound, and says which bound', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: looping });
    // The example agent 'assistant' sets no budget: the defaults bound it.
    const handle = await world.client.start({ agent: 'assistant', input: 'Add numbers until I say stop.' });
    const result = await handle.result();
    expectStopped(result, ['max_llm_calls']);
    expect(result.budget!.limit).toMatchObject(DEFAULT_BUDGET_LIMITS);
    expect(result.budget!.spent['max_llm_calls']).toBe(DEFAULT_BUDGET_LIMITS.max_llm_calls);
    // Not one call past the bound reached the provider.
    expect(world.fake.requests).toHaveLength(DEFAULT_BUDGET_LIMITS.max_llm_calls);
    // Each sum the model asked for ran once (a batch costs no tokens: the last one ran too), and the
    // transcript ends with the last of them answered.
    const results = result.transcript.filter((message) => message['role'] === 'tool');
    expect(results).toHaveLength(DEFAULT_BUDGET_LIMITS.max_llm_calls);
    expect(result.transcript.at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: `call_${DEFAULT_BUDGET_LIMITS.max_llm_calls - 1}`,
    });
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const followed = await runCli(['follow', handle.workflowId], env);
    expect(followed.stdout).toContain(
      `budget exhausted: max_llm_calls (${DEFAULT_BUDGET_LIMITS.max_llm_calls} of ${DEFAULT_BUDGET_LIMITS.max_llm_calls}, the default bound) reached;`,
    );
    expect(followed.stdout).toContain('Raise a bound in the agent\'s "budget" or the run\'s input (null: none)');
  });

  it("a run's own bound replaces the default: run --max-calls", async ({ startWorld }) => {
    const world = await startWorld({
      fake: looping,
      agents: [{ name: 'bounded', instructions: 'Add.', tools: ['add'] }],
    });
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const ran = await runCli(['run', 'bounded', 'Add', 'forever', '--max-calls', '3', '--follow'], env);
    expect(ran.stdout).toContain('budget exhausted: max_llm_calls (3 of 3) reached;');
    expect(world.fake.requests).toHaveLength(3);
    const refused = await runCli(['run', 'bounded', 'Add', '--max-calls', '0'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--max-calls must be a whole number > 0, or none');
  });
});
