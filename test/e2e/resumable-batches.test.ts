import { NativeConnection } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import type { Message } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import type { RunHandle } from '../../src/client/patchloop-client';
import { pendingHeartbeatDetails } from '../../src/streaming/chunk-client';
import { addTool } from '../../src/tools/examples';
import { startSideEffectServer } from '../../support/side-effects';
import { sideEffectWorld } from '../support/side-effect-world';
import { tools as sideEffectTools } from '../support/side-effect-tools';
import { temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';
import { createPatchloopWorker } from '../../src/worker/create-worker';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const payer = {
  name: 'payer',
  instructions: 'You charge cards.',
  tools: ['charge', 'settle', 'flaky', 'stubborn'],
  limits: { heartbeat_timeout_seconds: 2 },
};

/** Three charges: two finish at once, the third takes `seconds`. */
const threeCharges = (seconds: number) =>
  callTools([
    { id: 'c1', name: 'charge', arguments: '{"label": "a", "seconds": 0}' },
    { id: 'c2', name: 'charge', arguments: '{"label": "b", "seconds": 0}' },
    { id: 'c3', name: 'charge', arguments: `{"label": "c", "seconds": ${seconds}}` },
  ]);

/** What the model must see after the batch, exactly as after an uninterrupted attempt. */
const chargedResults: Message[] = [
  { role: 'tool', tool_call_id: 'c1', content: '"charged a"' },
  { role: 'tool', tool_call_id: 'c2', content: '"charged b"' },
  { role: 'tool', tool_call_id: 'c3', content: '"charged c"' },
];

/** Waits until a batch of `of` calls of the run has checkpointed `done` finished calls on the server. */
function checkpointed(run: RunHandle, done: number, of: number): Promise<true> {
  return eventually(
    async () =>
      (await pendingHeartbeatDetails(run.workflow)).some(
        (details) => Array.isArray(details['done']) && details['done'].length === done && details['of'] === of,
      )
        ? true
        : undefined,
    30_000,
    `a checkpoint of ${done} of ${of} finished calls`,
  );
}

/** Each label's side effects: how many, and with how many distinct idempotency keys. */
function tally(effects: Array<{ label: string; key: string; phase: string }>) {
  const byLabel = new Map<string, Set<string>>();
  const counts = new Map<string, number>();
  for (const effect of effects) {
    if (effect.phase !== 'start') continue;
    counts.set(effect.label, (counts.get(effect.label) ?? 0) + 1);
    byLabel.set(effect.label, (byLabel.get(effect.label) ?? new Set()).add(effect.key));
  }
  return { counts, keys: (label: string) => byLabel.get(label)?.size ?? 0 };
}

/** A side-effect server the in-process worker's tools report to (closed after the test). */
async function sideEffectsInProcess() {
  const effects = await startSideEffectServer();
  cleanups.push(() => effects.close());
  process.env['PATCHLOOP_TEST_EFFECTS_URL'] = effects.url;
  return effects;
}

describe('resumable tool batches: a finished call never runs twice', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal} of the worker after 2 of 3 calls finished: the retry runs only the third`, async () => {
      const { effects, fake, client, start } = await sideEffectWorld(
        [threeCharges(4), reply('paid')],
        () => payer,
        cleanups,
      );
      const first = await start('first');
      const run = await client.start({ agent: 'payer', input: 'charge three cards' });
      // The checkpoint of the two finished calls has reached the server (heartbeat details).
      await checkpointed(run, 2, 3);
      await first.kill(signal);
      await start('second');
      const result = await run.result();
      expect(result.status).toBe('completed');
      const { counts, keys } = tally(effects.effects);
      // Finished calls: exactly once. The call in flight: at most twice, both times with one key.
      expect(counts.get('a')).toBe(1);
      expect(counts.get('b')).toBe(1);
      expect(counts.get('c')).toBeGreaterThanOrEqual(1);
      expect(counts.get('c')).toBeLessThanOrEqual(2);
      expect(keys('c')).toBe(1);
      // The model got the results in declared order, as from one uninterrupted attempt.
      expect(fake.requests[1]!.body.messages.slice(-3)).toEqual(chargedResults);
      expect(result.transcript.slice(-4, -1)).toEqual(chargedResults);
      fake.assertDone();
    });
  }
});

describe('a call that finishes while its worker shuts down (SIGTERM)', () => {
  it('returns during the shutdown and is checkpointed on the way out: the retry on another worker keeps its result and does not run it again', async () => {
    const { effects, fake, client, start } = await sideEffectWorld(
      [
        callTools([
          { id: 'c1', name: 'charge', arguments: '{"label": "a", "seconds": 0}' },
          // Settled, it waits for a confirmation; told to stop by the shutdown, it returns within the batch's grace.
          { id: 'c2', name: 'settle', arguments: '{"label": "s", "seconds": 20}' },
        ]),
        reply('paid'),
      ],
      () => payer,
      cleanups,
    );
    const first = await start('first');
    const run = await client.start({ agent: 'payer', input: 'charge and settle' });
    await checkpointed(run, 1, 2);
    await eventually(
      () => effects.effects.find((effect) => effect.label === 's' && effect.phase === 'end'),
      30_000,
      'the settlement done, its confirmation awaited',
    );
    // Still running: only the charge is checkpointed.
    expect(await checkpointed(run, 1, 2)).toBe(true);
    await first.kill('SIGTERM');
    await start('second');
    const result = await run.result();
    expect(result.status).toBe('completed');
    const { counts } = tally(effects.effects);
    expect(counts.get('a')).toBe(1);
    expect(counts.get('s')).toBe(1);
    const results: Message[] = [
      { role: 'tool', tool_call_id: 'c1', content: '"charged a"' },
      { role: 'tool', tool_call_id: 'c2', content: '"settled s"' },
    ];
    expect(fake.requests[1]!.body.messages.slice(-2)).toEqual(results);
    expect(result.transcript.slice(-3, -1)).toEqual(results);
    fake.assertDone();
  });
});

describe('per-tool retries inside the batch attempt', () => {
  it('a retryable tool succeeds on its third attempt; one that keeps failing gives up; invalid arguments are never retried', async ({
    startWorld,
  }) => {
    const effects = await sideEffectsInProcess();
    const world = await startWorld({
      tools: [addTool, ...sideEffectTools],
      agents: [payer],
      fake: {
        script: [
          callTools([
            { id: 'f', name: 'flaky', arguments: '{"label": "sync"}' },
            { id: 's', name: 'stubborn', arguments: '{"label": "push"}' },
            { id: 'bad', name: 'flaky', arguments: '{"label": 7}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'payer', input: 'sync and push' });
    const result = await run.result();
    const tool = (id: string) => result.transcript.find((message) => message['tool_call_id'] === id)!['content'];
    expect(tool('f')).toBe('"sync done on attempt 3"');
    expect(tool('s')).toMatch(/push: attempt 2 failed \(after 2 attempts\)/);
    expect(tool('bad')).toMatch(/invalid arguments/);
    // Attempts per call: 3, 2, and none for the call whose arguments did not validate.
    expect([...effects.attempts.values()].sort()).toEqual([2, 3]);
    // All of it inside one attempt of the batch activity: nothing else ran twice.
    const history = await run.workflow.fetchHistory();
    const batchAttempts = (history.events ?? [])
      .filter((event) => event.activityTaskStartedEventAttributes)
      .map((event) => event.activityTaskStartedEventAttributes!.attempt);
    expect(batchAttempts.every((attempt) => attempt === 1)).toBe(true);
    world.fake.assertDone();
  });
});

describe('per-tool routing: tools on their own workers', () => {
  const router = (queue: string) => ({
    name: 'router',
    instructions: 'You route.',
    tools: ['add', 'wait', 'charge'],
    tool_task_queues: { charge: queue },
    limits: { heartbeat_timeout_seconds: 2 },
  });

  it('a batch split over two queues runs on both workers at once; the tools worker killed mid-batch resumes on another', async () => {
    const { effects, fake, client, toolQueue, start } = await sideEffectWorld(
      [
        callTools([
          // Not `add`: a fast tool alone would run as a local activity, not as a batch activity of its own.
          { id: 'c1', name: 'wait', arguments: '{"seconds": 0}' },
          { id: 'c2', name: 'charge', arguments: '{"label": "b", "seconds": 0}' },
          { id: 'c3', name: 'charge', arguments: '{"label": "c", "seconds": 4}' },
        ]),
        reply('routed'),
      ],
      router,
      cleanups,
    );
    await start('main');
    const tools = await start('tools-1', ['--tools-only', '--task-queue', toolQueue], toolQueue);
    const run = await client.start({ agent: 'router', input: 'wait and charge' });
    await checkpointed(run, 1, 2);
    await tools.kill('SIGKILL');
    await start('tools-2', ['--tools-only', '--task-queue', toolQueue], toolQueue);
    const result = await run.result();
    expect(result.status).toBe('completed');
    // Declared order across both batches, as if one batch had run them.
    expect(fake.requests[1]!.body.messages.slice(-3)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: '"waited 0 s"' },
      { role: 'tool', tool_call_id: 'c2', content: '"charged b"' },
      { role: 'tool', tool_call_id: 'c3', content: '"charged c"' },
    ]);
    // Routed calls ran only on the tools workers; the finished one once.
    expect(effects.effects.every((effect) => effect.worker.startsWith('tools-'))).toBe(true);
    const { counts, keys } = tally(effects.effects);
    expect(counts.get('b')).toBe(1);
    expect(counts.get('c')).toBeLessThanOrEqual(2);
    expect(keys('c')).toBe(1);
    // One batch activity per queue in history.
    const history = await run.workflow.fetchHistory();
    const queues = (history.events ?? [])
      .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'toolBatch')
      .map((event) => event.activityTaskScheduledEventAttributes!.taskQueue!.name);
    expect(queues).toHaveLength(2);
    expect(queues).toContain(toolQueue);
    expect(new Set(queues).size).toBe(2);
    fake.assertDone();
  });

  it('an abort during a routed batch cancels the calls on every queue', async () => {
    const { client, toolQueue, start } = await sideEffectWorld(
      [
        callTools([
          { id: 'w', name: 'wait', arguments: '{"seconds": 60}' },
          { id: 'c', name: 'charge', arguments: '{"label": "slow", "seconds": 60}' },
        ]),
      ],
      router,
      cleanups,
    );
    await start('main');
    await start('tools-1', ['--tools-only', '--task-queue', toolQueue], toolQueue);
    const run = await client.start({ agent: 'router', input: 'wait and charge' });
    await eventually(async () => ((await pendingHeartbeatDetails(run.workflow)).length === 2 ? true : undefined));
    const abortedAt = Date.now();
    await run.abort('stop both');
    const result = await run.result();
    expect(Date.now() - abortedAt).toBeLessThan(10_000);
    expect(result.status).toBe('aborted');
    const cancelled = (id: string) => result.transcript.find((message) => message['tool_call_id'] === id)!['content'];
    expect(cancelled('w')).toMatch(/cancelled by user.*Reason: stop both/);
    expect(cancelled('c')).toMatch(/cancelled by user.*Reason: stop both/);
  });

  it('a tools-only worker that nothing is routed to refuses to start, saying why', async () => {
    const { start } = await sideEffectWorld([], router, cleanups);
    await expect(
      start('stray', ['--tools-only', '--task-queue', 'nobody-routes-here'], 'nobody-routes-here'),
    ).rejects.toThrow(/no agent routes a tool to task queue 'nobody-routes-here'/);
  });
});

describe('routing edge cases (in-process workers)', () => {
  it('a batch routed to a queue no worker serves gives its calls an error naming the queue, and the run goes on', async ({
    startWorld,
  }) => {
    const nowhere = `nowhere-${randomUUID()}`;
    const world = await startWorld({
      agents: [
        {
          name: 'stranded',
          instructions: 'x',
          tools: ['add', 'repeat'],
          tool_task_queues: { add: nowhere },
          limits: { routed_tool_wait_seconds: 2 },
        },
      ],
      fake: {
        script: [
          callTools([
            { id: 'a', name: 'add', arguments: '{"a": 1, "b": 2}' },
            { id: 'r', name: 'repeat', arguments: '{"text": "x", "times": 2}' },
          ]),
          reply('went on'),
        ],
      },
    });
    const result = await (await world.client.start({ agent: 'stranded', input: 'go' })).result();
    expect(result.status).toBe('completed');
    const tool = (id: string) =>
      String(result.transcript.find((message) => message['tool_call_id'] === id)!['content']);
    expect(tool('a')).toContain(`no worker took these tools from task queue '${nowhere}' in time`);
    expect(tool('r')).toBe('"xx"');
    world.fake.assertDone();
  });

  it('a call id the provider repeats across queues still gets each call its own result, in declared order', async ({
    startWorld,
  }) => {
    await sideEffectsInProcess();
    const toolQueue = `gpu-${randomUUID()}`;
    const agent = {
      name: 'twins',
      instructions: 'x',
      tools: ['add', 'charge'],
      tool_task_queues: { charge: toolQueue },
    };
    const world = await startWorld({
      tools: [addTool, ...sideEffectTools],
      agents: [agent],
      fake: {
        script: [
          callTools([
            { id: 'X', name: 'add', arguments: '{"a": 1, "b": 1}' },
            { id: 'X', name: 'charge', arguments: '{"label": "card", "seconds": 0}' },
            { id: 'X', name: 'add', arguments: '{"a": 2, "b": 2}' },
          ]),
          reply('done'),
        ],
      },
    });
    const connection = await NativeConnection.connect({ address: temporalAddress() });
    const tools = await createPatchloopWorker({
      connection,
      config: { ...world.config, taskQueue: toolQueue },
      agents: [agent],
      tools: [addTool, ...sideEffectTools],
      toolsOnly: true,
    });
    const running = tools.run();
    cleanups.push(async () => {
      tools.shutdown();
      await running;
      await connection.close();
    });
    const result = await (await world.client.start({ agent: 'twins', input: 'go' })).result();
    expect(
      result.transcript.filter((message) => message['role'] === 'tool').map((message) => message['content']),
    ).toEqual(['2', '"charged card"', '4']);
  });
});
