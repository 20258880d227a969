import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { RunFailedError, type RunHandle } from '../../src/client/patchloop-client';
import { validateToolLinkage, type Message } from '../../src/context';
import { FakeModelServer } from '../../src/fake-model/server';
import type { RunEvent } from '../../src/runtime';
import { isSummaryCall, lastPageRead, pageReader, sevenFieldSummary } from '../../support/context-model';
import type { ChatRequestBody } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import { SESSION_SCHEMA_VERSION } from '../../src/runtime';
import { pageText, tools } from '../support/context-tools';
import { clientOn, temporalAddress } from '../support/temporal';
import { eventOf, eventually, recordCarriedState, recordHistory } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

const WINDOW = 12_000;
const TASK = 'Read the report, one page per call, and tell me how many pages you read.';

const workers: WorkerProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const reader = (context: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  name: 'reader',
  instructions: 'You read reports.',
  tools: ['read_page'],
  context,
  ...extra,
});

/** Every event the run's log holds (the client's own paging). */
const allEvents = async (run: RunHandle): Promise<RunEvent[]> => (await run.allEvents()).events;

/** What every compacted run must show: a valid transcript, the task kept, nothing read twice. */
function expectSound(transcript: Message[]): void {
  validateToolLinkage(transcript);
  expect(transcript[1]).toEqual({ role: 'user', content: TASK });
  const results = transcript.filter((message) => message['role'] === 'tool').map((message) => message['tool_call_id']);
  expect(new Set(results).size).toBe(results.length);
}

describe('context compaction against a provider that enforces a 12,000-token window', () => {
  it('proactive (window_tokens set): 40 pages of 4 KB complete, not one request over the window', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { windowTokens: WINDOW, responder: pageReader(40, 4) },
      agents: [reader({ window_tokens: WINDOW })],
      tools,
    });
    const run = await world.client.start({
      agent: 'reader',
      input: TASK,
      // Small enough to continue as new along the way: the context ledger goes with it.
      continue_as_new: { max_history_events: 400 },
    });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('I read all 40 pages.');
    const requests = world.fake.requests;
    expect(requests.filter((request) => request.overWindow)).toEqual([]);
    for (const request of requests) expect(request.promptTokens).toBeLessThanOrEqual(WINDOW);
    // Every agent request still carries the task; every page was asked for exactly once.
    const agentRequests = requests.filter((request) => !isSummaryCall(request.body));
    for (const request of agentRequests) expect(request.body.messages[1]).toEqual({ role: 'user', content: TASK });
    expect(agentRequests).toHaveLength(41);
    expectSound(result.transcript);
    // The newest page stays verbatim; the oldest were cleared or folded into the summary.
    expect(result.transcript).toContainEqual({
      role: 'tool',
      tool_call_id: 'call_page_40',
      content: JSON.stringify(pageText(40, 4)),
    });
    expect(JSON.stringify(result.transcript)).not.toContain(JSON.stringify(pageText(1, 4)).slice(1, -1));
    const events = await allEvents(run);
    const ends = events.filter((event) => event.event_type === 'context_compaction_end');
    expect(ends.length).toBeGreaterThan(0);
    for (const end of ends) {
      if (end.event_type !== 'context_compaction_end') continue;
      expect(end.reason).toBe('proactive');
      expect(end.tokens_after).toBeLessThan(end.tokens_before);
    }
    expect(events.some((event) => event.event_type === 'continued_as_new')).toBe(true);
    // Usage counts every call the provider answered, summary calls included.
    const answered = requests.filter((request) => !request.overWindow);
    expect(result.usage?.prompt_tokens).toBe(answered.reduce((sum, request) => sum + request.promptTokens, 0));
    const status = await run.status();
    expect(status.context).toMatchObject({ window_tokens: WINDOW, compact_at_tokens: 9600 });
    // The events before the last continue-as-new are not all carried; the ledger is.
    expect(status.context.compactions).toBeGreaterThanOrEqual(ends.length);
    await recordCarriedState(run, 'agent-run-v3');
    await recordHistory(run, 'context-compaction-proactive');
  });

  it("reactive (no window known): the provider's context_length_exceeded compacts and retries, then the learned window keeps it proactive", async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: { windowTokens: WINDOW, responder: pageReader(40, 4) },
      agents: [reader()],
      tools,
    });
    const run = await world.client.start({ agent: 'reader', input: TASK });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('I read all 40 pages.');
    expectSound(result.transcript);
    const requests = world.fake.requests;
    // Only the first overflow reached the provider: it stated the window, the run kept under it after.
    expect(requests.filter((request) => request.overWindow)).toHaveLength(1);
    const events = await allEvents(run);
    const reasons = events.flatMap((event) => (event.event_type === 'context_compaction_end' ? [event.reason] : []));
    expect(reasons[0]).toBe('reactive');
    // The refused call is in the log as such, before the compaction that answered it.
    const refused = events.findIndex((event) => event.event_type === 'llm_call_end' && event.outcome === 'refused');
    const compaction = events.findIndex((event) => event.event_type === 'context_compaction_start');
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(refused).toBeLessThan(compaction);
    expect(reasons.slice(1).every((reason) => reason === 'proactive')).toBe(true);
    expect((await run.status()).context.window_tokens).toBe(WINDOW);
    await recordHistory(run, 'context-compaction-reactive');
  });

  it('the completion a request reserves (max_tokens) is kept free in the window too', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { windowTokens: WINDOW, responder: pageReader(20, 4) },
      agents: [reader({ window_tokens: WINDOW }, { llm_options: { max_tokens: 5000 } })],
      tools,
    });
    const run = await world.client.start({ agent: 'reader', input: TASK });
    const result = await run.result();
    expect(result.answer).toBe('I read all 20 pages.');
    // The provider counts prompt + max_tokens against its window: not one request passed it.
    expect(world.fake.requests.filter((request) => request.overWindow)).toEqual([]);
    for (const request of world.fake.requests.filter((request) => !isSummaryCall(request.body)))
      expect(request.promptTokens + 5000).toBeLessThanOrEqual(WINDOW);
  });

  it('a single message larger than the window (the task itself) is cut with a visible marker, head and tail kept', async ({
    startWorld,
  }) => {
    const task = `START ${'lorem ipsum dolor sit amet '.repeat(4000)} END`;
    const world = await startWorld({
      fake: { windowTokens: WINDOW, script: [], responder: () => ({ kind: 'reply', content: 'done' }) },
      agents: [reader({ window_tokens: WINDOW }, { tools: [] })],
    });
    const run = await world.client.start({ agent: 'reader', input: task });
    const result = await run.result();
    expect(result.answer).toBe('done');
    const [request] = world.fake.requests;
    expect(world.fake.requests).toHaveLength(1);
    expect(request!.promptTokens).toBeLessThanOrEqual(WINDOW);
    const sent = String(request!.body.messages[1]!['content']);
    expect(sent.startsWith('START lorem ipsum')).toBe(true);
    expect(sent.endsWith('sit amet  END')).toBe(true);
    expect(sent).toMatch(/\[\.\.\. [\d,]+ characters cut to fit the context window \.\.\.\]/);
  });

  it('a compaction that frees nothing ends the run with a typed ContextTooLong that says what was tried, not a loop', async ({
    startWorld,
  }) => {
    // The instructions alone are larger than the window: nothing a compaction may cut can help.
    const instructions = 'Always follow this policy. '.repeat(3000);
    const world = await startWorld({
      fake: { windowTokens: WINDOW, responder: pageReader(40, 4) },
      agents: [reader({}, { instructions })],
      tools,
    });
    const run = await world.client.start({ agent: 'reader', input: TASK });
    const error = await run.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('ContextTooLong');
    expect((error as RunFailedError).message).toMatch(
      /does not fit the model's window of 12000 tokens: a reactive compaction/,
    );
    // One refused request taught the window; no second request was sent.
    expect(world.fake.requests).toHaveLength(1);
    expect(world.fake.requests[0]!.overWindow).toBe(true);
  });

  it('an abort during the summary call leaves the context as it was and ends the run aborted', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        windowTokens: WINDOW,
        // Every page is 4 KB of tool result: clearing alone would do, so summarize only.
        responder: pageReader(40, 4, () => ({ kind: 'hang' })),
      },
      agents: [reader({ window_tokens: WINDOW, strategy: ['summarize'] })],
      tools,
    });
    const run = await world.client.start({ agent: 'reader', input: TASK });
    await eventOf(run, 'context_compaction_start');
    const fake = world.fake;
    await eventually(() => (fake.requests.some((request) => isSummaryCall(request.body)) ? true : undefined));
    await run.abort('enough');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('enough');
    expectSound(result.transcript);
    // Every page read so far is still there verbatim: the compaction was not applied.
    const pages = result.transcript.filter((message) => message['role'] === 'tool');
    expect(pages.length).toBeGreaterThan(5);
    pages.forEach((message, index) => expect(message['content']).toBe(JSON.stringify(pageText(index + 1, 4))));
    expect(result.transcript.at(-1)).toEqual({
      role: 'assistant',
      content: '<Truncated due to cancel from user. Reason: enough>',
    });
    const end = await eventOf(run, 'context_compaction_end');
    expect(end).toMatchObject({ aborted: true, summary_calls: 1 });
    // The summary call was given up at once, not left waiting for the provider.
    const summaryCall = fake.requests.find((request) => isSummaryCall(request.body))!;
    expect(summaryCall.abandonedAt).toBeDefined();
  });

  it('kill -9 during a summary call: a new worker runs the compaction again and the run completes', async () => {
    let hung = false;
    const fake = await FakeModelServer.start({
      windowTokens: WINDOW,
      responder: pageReader(40, 4, () => {
        if (hung) return undefined;
        hung = true;
        return { kind: 'hang' };
      }),
    });
    const taskQueue = `compaction-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    cleanups.push(
      () => client.close(),
      () => fake.close(),
    );
    const start = async () => {
      const worker = await spawnWorker({
        address: temporalAddress(),
        taskQueue,
        modelUrl: fake.url,
        agents: [
          reader({ window_tokens: WINDOW, strategy: ['summarize'] }, { limits: { heartbeat_timeout_seconds: 2 } }),
        ],
        args: ['--tools', 'test/support/context-tools.ts'],
      });
      workers.push(worker);
      return worker;
    };
    const first = await start();
    const run = await client.start({ agent: 'reader', input: TASK });
    await eventOf(run, 'context_compaction_start');
    await eventually(() => (fake.requests.some((request) => isSummaryCall(request.body)) ? true : undefined));
    await first.kill('SIGKILL');
    await start();
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('I read all 40 pages.');
    expectSound(result.transcript);
    expect(fake.requests.filter((request) => request.overWindow)).toEqual([]);
    // The summary the second attempt wrote is in the transcript, once.
    const summaries = result.transcript.filter((message) =>
      String(message['content']).startsWith('<context_compaction_summary>'),
    );
    expect(summaries).toHaveLength(1);
  });

  it('a chat session compacts the same way, and its context ledger goes on across continue-as-new', async ({
    startWorld,
  }) => {
    // Each turn reads ten more pages, then answers.
    const responder = (body: ChatRequestBody) => {
      if (isSummaryCall(body)) return reply(sevenFieldSummary(lastPageRead(body)));
      const last = body.messages.at(-1)!;
      const read = lastPageRead(body);
      if (last['role'] === 'tool' && read % 10 === 0) return reply(`read up to page ${read}`);
      const page = read + 1;
      return callTools([{ id: `call_page_${page}`, name: 'read_page', arguments: JSON.stringify({ page, kb: 4 }) }]);
    };
    const world = await startWorld({
      fake: { windowTokens: WINDOW, responder },
      agents: [reader({ window_tokens: WINDOW })],
      tools,
    });
    const session = await world.client.startSession({ agent: 'reader', continue_as_new: { max_history_events: 150 } });
    const runs = new Set<string>();
    let compactions = 0;
    for (const turn of [1, 2, 3]) {
      const answer = await session.send(turn === 1 ? TASK : 'Go on with ten more pages.');
      expect(answer.reply).toBe(`read up to page ${turn * 10}`);
      runs.add((await session.workflow.describe()).runId);
      const status = await session.status();
      // The ledger only grows, whichever run of the chain answers.
      expect(status.context.compactions).toBeGreaterThanOrEqual(compactions);
      compactions = status.context.compactions;
    }
    expect(runs.size).toBeGreaterThan(1);
    expect(compactions).toBeGreaterThan(1);
    expect(world.fake.requests.filter((request) => request.overWindow)).toEqual([]);
    const transcript = await session.transcript();
    expectSound(transcript);
    expect(transcript.at(-1)).toEqual({ role: 'assistant', content: 'read up to page 30' });
    await recordCarriedState(session, `chat-session-v${SESSION_SCHEMA_VERSION}`);
  });
});
