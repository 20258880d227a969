import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { describe, expect, inject } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { RunFailedError } from '../../src/client/patchloop-client';
import { jsonOutput, followRun } from '../../src/client/follow';
import { callTools, failWith, reply } from '../../src/fake-model/steps';
import type { FakeStep } from '../../src/fake-model/steps';
import type { StreamEvent } from '../../src/streaming/chunk';
import { recordHistory } from '../support/wait';
import { runCli } from '../support/cli';

const WHOLE = ['The whole ', 'answer, ', 'every word ', 'of it.'];

/** A run whose first attempt breaks as `broken` describes, then gets the whole answer. */
async function recoversFrom(startWorld: StartWorld, broken: FakeStep, history?: string) {
  const world = await startWorld({
    fake: { script: [broken, reply(WHOLE)] },
    agents: [{ name: 'plain', instructions: 'Answer.', tools: [] }],
  });
  const run = await world.client.start({ agent: 'plain', input: 'hi' });
  const result = await run.result();
  // Only the complete reply reaches the transcript: nothing of the broken attempt.
  expect(result.transcript.slice(1)).toEqual([
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'The whole answer, every word of it.' },
  ]);
  expect(JSON.stringify(result.transcript)).not.toContain('partial');
  // The retry sent exactly the same request.
  const [first, second] = world.fake.requests.map((request) => request.body);
  expect(world.fake.requests).toHaveLength(2);
  expect(second).toEqual(first);
  world.fake.assertDone();
  if (history) await recordHistory(run, history);
}

describe('broken provider replies are failed attempts, never answers', () => {
  it('a connection reset mid-body (after 150 bytes of the stream) is retried', async ({ startWorld }) => {
    await recoversFrom(
      startWorld,
      reply(['partial ', 'text that ', 'never ends'], { fault: { kind: 'reset', afterBytes: 150 } }),
    );
  });

  it('a stream that ends cleanly without finish_reason is retried', async ({ startWorld }) => {
    await recoversFrom(
      startWorld,
      reply(['partial ', 'text'], { fault: { kind: 'eof', omit: 'finish_reason' } }),
      'stream-incomplete-retry',
    );
  });

  it('a stream that ends cleanly without [DONE] is retried', async ({ startWorld }) => {
    await recoversFrom(startWorld, reply(['partial ', 'text'], { fault: { kind: 'eof', omit: 'done' } }));
  });

  it('a stream with a data line that is not JSON is retried', async ({ startWorld }) => {
    await recoversFrom(startWorld, reply(['partial ', 'text'], { fault: { kind: 'junk', afterChunks: 1 } }));
  });

  it('non-streamed: a truncated body, a reply without choices and one without finish_reason are retried', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          reply('partial body', { fault: { kind: 'reset', afterBytes: 60 } }),
          reply('partial choices', { fault: { kind: 'no_choices' } }),
          reply('partial finish', { fault: { kind: 'eof', omit: 'finish_reason' } }),
          reply('the whole answer'),
        ],
      },
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [], stream: false }],
    });
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    const result = await run.result();
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'the whole answer' },
    ]);
    const bodies = world.fake.requests.map((request) => JSON.stringify(request.body));
    expect(bodies).toHaveLength(4);
    expect(new Set(bodies).size).toBe(1);
    world.fake.assertDone();
  });

  it('half-written tool-call arguments are never executed: the tool runs once, with the arguments the model really sent', async ({
    startWorld,
  }) => {
    const args = '{"a": 15, "b": 27}';
    const world = await startWorld({
      fake: {
        script: [
          // The first fragment ('{"a": 15,') arrives, half of the second, then the connection resets.
          callTools([{ id: 'call_1', name: 'add', arguments: args }], { fault: { kind: 'reset', afterChunks: 1 } }),
          callTools([{ id: 'call_1', name: 'add', arguments: args }]),
          reply('42'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'add 15 and 27' });
    const result = await run.result();
    expect(result.transcript.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: args } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '42' },
      { role: 'assistant', content: '42' },
    ]);
    const events = (await run.status()).events;
    expect(events.filter((event) => event.event_type === 'tool_call_start')).toHaveLength(1);
    expect(events.filter((event) => event.event_type === 'tool_call_error')).toHaveLength(0);
    expect(world.fake.requests[2]!.body.messages.slice(-2)).toEqual(result.transcript.slice(2, 4));
    world.fake.assertDone();
  });

  it.for(['in-process', 'redis'] as const)(
    'followers (%s chunks) see the broken attempt marked failed, then the retry from chunk 0; the answer is the retry’s',
    async (transport, { startWorld }) => {
      const world = await startWorld({
        ...(transport === 'redis'
          ? {
              config: {
                redis: {
                  url: inject('redisUrl'),
                  maxEntriesPerRun: 1000,
                  ttlSeconds: 600,
                  keyPrefix: 'patchloop:faults:',
                },
              },
            }
          : {}),
        fake: {
          script: [
            reply(['partial ', 'text ', 'that ', 'breaks'], {
              chunkDelayMs: 150,
              fault: { kind: 'eof', omit: 'finish_reason' },
            }),
            reply(WHOLE, { chunkDelayMs: 100 }),
          ],
        },
        agents: [{ name: 'plain', instructions: 'Answer.', tools: [] }],
      });
      const run = await world.client.start({ agent: 'plain', input: 'hi' });
      const lines: string[] = [];
      const result = await followRun(
        run,
        jsonOutput((line) => lines.push(line)),
        { intervalMs: 50 },
      );
      const chunks = lines
        .map((line) => JSON.parse(line) as StreamEvent | { event_type: string })
        .filter((event): event is StreamEvent => ['llm_chunk_arrive', 'llm_stream_end'].includes(event.event_type));
      const failed = chunks.find((event) => event.event_type === 'llm_stream_end');
      expect(failed).toMatchObject({
        event_type: 'llm_stream_end',
        llm_call: 1,
        attempt: 1,
        outcome: 'failed',
        error: 'ProviderStreamIncomplete',
      });
      const retried = chunks.filter((event) => event.event_type === 'llm_chunk_arrive' && event.attempt === 2);
      expect(retried.map((event) => (event.event_type === 'llm_chunk_arrive' ? event.chunk_index : -1))).toEqual([
        0, 1, 2, 3,
      ]);
      expect(retried.map((event) => (event.event_type === 'llm_chunk_arrive' ? event.chunk : '')).join('')).toBe(
        result.answer,
      );
      // Whatever of attempt 1 the follower saw comes before its failed marker, never after.
      const failedAt = chunks.indexOf(failed!);
      expect(chunks.slice(failedAt).every((event) => event.attempt === 2 || event === failed)).toBe(true);
      world.fake.assertDone();
    },
  );
});

describe('retry budgets that fit a durable run', () => {
  it('exhausted quota (429 insufficient_quota) fails at once with its own type', async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          failWith(429, {
            code: 'insufficient_quota',
            type: 'insufficient_quota',
            message: 'You exceeded your current quota',
          }),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'hi' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('ProviderQuotaExceeded');
    expect(error.message).toContain('no quota left');
    expect(world.fake.requests).toHaveLength(1);
    world.fake.assertDone();
  });

  it('x-should-retry: false stops at once, x-should-retry: true retries a status that would not be', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          failWith(400, { message: 'overloaded', headers: { 'x-should-retry': 'true', 'retry-after-ms': '100' } }),
          reply('after the retry'),
        ],
      },
    });
    const retried = await world.client.start({ agent: 'assistant', input: 'hi' });
    expect((await retried.result()).answer).toBe('after the retry');
    expect(world.fake.requests).toHaveLength(2);
    world.fake.enqueue(failWith(503, { message: 'gone for good', headers: { 'x-should-retry': 'false' } }));
    const stopped = await world.client.start({ agent: 'assistant', input: 'hi' });
    const error = (await stopped.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error.type).toBe('ProviderUnavailable');
    expect(error.message).toContain('x-should-retry: false');
    expect(world.fake.requests).toHaveLength(3);
    world.fake.assertDone();
  });

  it('an outage longer than the retry budget fails the run with the last error, after many attempts', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { responder: () => failWith(503, { message: 'upstream down' }) },
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [], limits: { llm_retry_budget_seconds: 5 } }],
    });
    const started = Date.now();
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('ProviderUnavailable');
    expect(error.message).toMatch(/retry budget ran out; last error: provider error \(503\): upstream down/);
    // 1 s, 2 s, 4 s backoff: three or four attempts fit in 5 s, not a fixed five.
    expect(world.fake.requests.length).toBeGreaterThanOrEqual(3);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('a budget that runs out during a hanging attempt still reports the last provider error', async ({
    startWorld,
  }) => {
    const down = failWith(503, { message: 'upstream down' });
    const world = await startWorld({
      // Attempts at 0 s and 1 s fail; the one at 3 s hangs until the 5 s budget ends it on the server.
      fake: { script: [down, down, { kind: 'hang' }] },
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [], limits: { llm_retry_budget_seconds: 5 } }],
    });
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.message).toMatch(/retry budget ran out; last error: provider error \(503\): upstream down/);
    expect(error.type).toBe('ProviderUnavailable');
    expect(world.fake.requests).toHaveLength(3);
    // The server timed the hanging attempt out, and its heartbeat details carry the previous
    // attempt's failure: what the run reports when a timeout comes without the last failure.
    const { events } = await world.client.temporal.workflow.getHandle(run.workflowId).fetchHistory();
    const timedOut = (events ?? []).find((event) => event.activityTaskTimedOutEventAttributes);
    const info = timedOut?.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo;
    expect(info?.timeoutType).toBe(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE);
    const [details] = info?.lastHeartbeatDetails?.payloads ?? [];
    expect(defaultPayloadConverter.fromPayload(details!)).toMatchObject({
      last_failure: { type: 'ProviderUnavailable', message: 'provider error (503): upstream down' },
    });
  });
});

describe("error answers outside OpenAI's shape", () => {
  it("a validation error in FastAPI's shape sent as a 500 fails the run at once, with the server's words", async ({
    startWorld,
  }) => {
    const detail = JSON.stringify({
      detail: [
        { type: 'missing', loc: ['body', 'model'], msg: 'Field required', input: {} },
        { type: 'string_type', loc: ['body', 'messages', 0, 'content'], msg: 'Input should be a valid string' },
      ],
    });
    const world = await startWorld({
      fake: { script: [failWith(500, { body: detail })] },
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [] }],
    });
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error.type).toBe('ProviderRejected');
    expect(error.causeMessage).toBe(
      "the model call failed: provider rejected the request (500, a validation error: retrying cannot help): body.model: Field required; body.messages.0.content: Input should be a valid string. If this server is not OpenAI's, name its kind in the agent's provider.profile or PATCHLOOP_PROVIDER_PROFILE (llama-cpp, vllm, ollama, litellm, generic).",
    );
    expect(world.fake.requests).toHaveLength(1);
    world.fake.assertDone();
  });

  it('a 500 with a new request id and words in every answer fails within llm_server_error_seconds, not the retry budget', async ({
    startWorld,
  }) => {
    const stages = ['parse', 'sample', 'decode', 'render', 'flush', 'merge', 'close', 'split'];
    const world = await startWorld({
      fake: {
        // Never twice the same answer, even with ids masked: only the time without progress can end it.
        responder: () =>
          failWith(500, {
            body: (n) => `worker crashed in the ${stages[n % stages.length]} stage (request ${n})`,
            contentType: 'text/plain; charset=utf-8',
          }),
      },
      agents: [
        {
          name: 'plain',
          instructions: 'Answer.',
          tools: [],
          limits: { llm_server_error_seconds: 3, llm_retry_budget_seconds: 60 },
        },
      ],
    });
    const started = Date.now();
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    const error = (await run.result().catch((e: unknown) => e)) as RunFailedError;
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(RunFailedError);
    const last = world.fake.requests.length;
    expect(error.type).toBe('ProviderUnavailable');
    expect(error.causeMessage).toBe(
      `the model call failed: provider error (500): worker crashed in the ${stages[last % stages.length]} stage (request ${last}) (nothing but 5xx answers and failed connections for 3 s or more, the limit llm_server_error_seconds: retrying stopped)`,
    );
    // Attempts at 0, 1 and 3 s (the backoff): the one at 3 s or later ends it, far inside the 60 s budget.
    expect(last).toBeGreaterThanOrEqual(3);
    expect(elapsed).toBeLessThan(30_000);
    console.log(`500s with a new body each time ended the run after ${last} attempts, ${elapsed} ms`);
  });
});

describe('a call that keeps failing says why while it retries', () => {
  it("show names the provider's last error and the attempt; --json has it too", async ({ startWorld }) => {
    const world = await startWorld({
      fake: {
        script: [
          failWith(503, { message: 'upstream busy' }),
          failWith(503, { message: 'upstream busy' }),
          { kind: 'hang', chunks: ['still '] },
        ],
      },
      agents: [{ name: 'plain', instructions: 'Answer.', tools: [] }],
    });
    const run = await world.client.start({ agent: 'plain', input: 'hi' });
    await world.fake.waitForRequests(3);
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const show = await runCli(['show', run.workflowId], env);
    expect(show.stdout).toContain(
      'retrying: llmPhase, attempt 3; last error: ProviderUnavailable: provider error (503): upstream busy',
    );
    const json = JSON.parse((await runCli(['show', run.workflowId, '--json'], env)).stdout) as { retrying: unknown };
    expect(json.retrying).toEqual([
      {
        activity: 'llmPhase',
        attempt: 3,
        last_failure: { type: 'ProviderUnavailable', message: 'provider error (503): upstream busy' },
      },
    ]);
    // The client says the same to code.
    expect(await run.retrying()).toEqual(json.retrying);
    await run.abort('done');
    expect((await run.result()).status).toBe('aborted');
  });
});
