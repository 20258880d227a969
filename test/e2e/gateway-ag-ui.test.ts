import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { buildResumeArray, HttpAgent, verifyEvents } from '@ag-ui/client';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect } from 'vitest';
import { callTools, reply, toolCall } from '../../src/fake-model/steps';
import { answerApproval, ask, startChatPage } from '../../support/ag-ui-chat';
import { launchBrowser } from '../../support/browser';
import { startGatewayProcess } from '../support/cli';
import { testWithWorld } from '../support/fixtures';
import { documentedBlocks, gatewayKeys } from '../support/gateway-keys';
import { citiesWorld, runProcess } from '../../support/gateway-world';
import { repositoryRoot } from '../../support/repository';
import { crashGateway } from '../support/crash-gateway';
import { eventually } from '../support/wait';
import { threadSessionId } from '../../src/gateway/ag-ui/thread-input';

const { transfers, tools, agents } = citiesWorld();
const it = testWithWorld({ agents, tools });

const { folder, keysFile, tag, alice, bob, gatewayOf } = gatewayKeys(agents);

/** The fenced blocks of a language in docs/ag-ui.md, in order, at `url` instead of the docs' address. */
function documented(language: string, url: string): string[] {
  return documentedBlocks('ag-ui.md', language).map((block) => block.replaceAll('http://127.0.0.1:8400', url));
}

type Streamed = { id: string | undefined; event: BaseEvent & Record<string, unknown> };

/** Reads an SSE answer's events with their ids; `until` stops reading early (the connection is dropped). */
async function readStream(
  answer: Response,
  until?: (events: Streamed[]) => boolean,
  events: Streamed[] = [],
): Promise<Streamed[]> {
  const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return events;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data === undefined) continue;
      events.push({ id, event: JSON.parse(data) as Streamed['event'] });
      if (until?.(events)) {
        await reader.cancel();
        return events;
      }
    }
  }
}

/** Posts a run's input (with `Last-Event-ID` to re-attach). */
function postRun(url: string, key: string, body: Record<string, unknown>, lastEventId?: string) {
  return fetch(`${url}/ag-ui/assistant`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      Accept: 'text/event-stream',
      ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** Whether a stream passes `verifyEvents` of `@ag-ui/client` (throws its error when not). */
async function verified(events: Streamed[]): Promise<BaseEvent[]> {
  return lastValueFrom(from(events.map((one) => one.event)).pipe(verifyEvents(false), toArray()));
}

const textOf = (events: Streamed[]) =>
  events
    .filter((one) => one.event.type === EventType.TEXT_MESSAGE_CONTENT)
    .map((one) => one.event['delta'])
    .join('');
const typesOf = (events: Streamed[]) =>
  events
    .map((one) => one.event.type as string)
    .filter((type, at, types) => type !== 'TEXT_MESSAGE_CONTENT' || types[at - 1] !== type);

/** The text of each message a stream told, in order, but those it marked superseded. */
function standingMessages(events: Streamed[]): string[] {
  const texts = new Map<string, string>();
  const superseded = new Set<string>();
  for (const { event } of events) {
    if (event.type === EventType.TEXT_MESSAGE_START) texts.set(event['messageId'] as string, '');
    if (event.type === EventType.TEXT_MESSAGE_CONTENT)
      texts.set(event['messageId'] as string, texts.get(event['messageId'] as string)! + (event['delta'] as string));
    if (event.type === EventType.CUSTOM && event['name'] === 'patchloop.message_superseded')
      superseded.add((event['value'] as { messageId: string }).messageId);
  }
  return [...texts].filter(([id]) => !superseded.has(id)).map(([, text]) => text);
}

function userInput(threadId: string, content: string, messages: unknown[] = []) {
  return { threadId, runId: randomUUID(), messages: [...messages, { id: randomUUID(), role: 'user', content }] };
}

describe('AG-UI on the gateway', () => {
  it("HttpAgent holds a conversation on a thread: an approval is an interrupt, the next run's resume decides it", async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const threadId = `thread-${randomUUID()}`;
    const agent = new HttpAgent({
      url: `${gateway.url}/ag-ui/assistant`,
      headers: { Authorization: `Bearer ${alice}` },
      threadId,
    });
    world.fake.enqueue(
      reply(['Paris is ', 'the capital.']),
      callTools([toolCall('pay-1', 'transfer', { to: 'bob', amount: 5 })]),
      reply(['Sent ', '5 to bob.']),
    );
    const seen: string[] = [];
    const subscriber = { onEvent: ({ event }: { event: BaseEvent }) => void seen.push(event.type) };

    agent.addMessage({ id: 'u1', role: 'user', content: 'What is Paris?' });
    const first = await agent.runAgent({}, subscriber);
    expect(first.result).toBe('Paris is the capital.');
    expect(seen).toEqual([
      'RUN_STARTED',
      'STATE_SNAPSHOT',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      ...seen.filter((type) => type === 'TEXT_MESSAGE_CONTENT'),
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'STATE_SNAPSHOT',
      'RUN_FINISHED',
    ]);
    expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Paris is the capital.' });

    // The same thread goes on: the model sees the first turn, and the gated call waits.
    seen.length = 0;
    agent.addMessage({ id: 'u2', role: 'user', content: 'Pay bob 5.' });
    await agent.runAgent({}, subscriber);
    expect(world.fake.requests.at(-1)!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'What is Paris?' },
      { role: 'assistant', content: 'Paris is the capital.' },
      { role: 'user', content: 'Pay bob 5.' },
    ]);
    expect(agent.pendingInterrupts).toEqual([
      {
        id: 'pay-1',
        reason: 'tool_approval',
        message: 'transfer {"to":"bob","amount":5}: approve?',
        toolCallId: 'pay-1',
        responseSchema: expect.objectContaining({ required: ['approved'] }),
      },
    ]);
    expect(seen.slice(-3)).toEqual(['STEP_FINISHED', 'STATE_SNAPSHOT', 'RUN_FINISHED']);
    expect(agent.messages.at(-1)).toMatchObject({
      role: 'assistant',
      toolCalls: [{ id: 'pay-1', function: { name: 'transfer', arguments: '{"to":"bob","amount":5}' } }],
    });
    expect(transfers.filter((one) => one.to === 'bob')).toEqual([]);

    // A new message while it waits is refused: the interrupt comes first.
    const busy = await postRun(gateway.url, alice, userInput(threadId, 'Hello?'));
    expect(busy.status).toBe(409);
    expect(await busy.json()).toEqual({
      error: { type: 'Conflict', message: 'the thread waits for decisions on pay-1: answer them with "resume"' },
    });

    seen.length = 0;
    const resume = buildResumeArray(agent.pendingInterrupts, {
      'pay-1': { status: 'resolved', payload: { approved: true, reason: 'fine' } },
    });
    const last = await agent.runAgent({ resume }, subscriber);
    expect(last.result).toBe('Sent 5 to bob.');
    expect(transfers.filter((one) => one.to === 'bob')).toEqual([{ to: 'bob', amount: 5 }]);
    // The resumed run told the call's result (never the call again) and the answer.
    expect(seen.filter((type) => type.startsWith('TOOL_CALL'))).toEqual(['TOOL_CALL_RESULT']);
    const messages = agent.messages.map((message) => ({ role: message.role, content: message.content }));
    expect(messages).toEqual([
      { role: 'user', content: 'What is Paris?' },
      { role: 'assistant', content: 'Paris is the capital.' },
      { role: 'user', content: 'Pay bob 5.' },
      { role: 'assistant', content: undefined },
      { role: 'tool', content: 'sent 5 to bob' },
      { role: 'assistant', content: 'Sent 5 to bob.' },
    ]);
    expect(agent.pendingInterrupts).toEqual([]);
  });

  it('a stream re-attached with Last-Event-ID after the gateway was killed gets the rest once; each stream verifies', async ({
    startWorld,
  }) => {
    const words = Array.from({ length: 12 }, (_, index) => `word${index} `);
    const world = await startWorld({
      agents,
      tools,
      fake: { script: [reply(words, { firstChunkDelayMs: 300, chunkDelayMs: 300 })] },
    });
    const agentsFile = join(folder, `agents-${randomUUID()}.json`);
    writeFileSync(agentsFile, JSON.stringify(agents));
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const serve = () => startGatewayProcess(agentsFile, keysFile, env);
    const first = await serve();
    const input = userInput(`thread-${randomUUID()}`, 'Count.');
    const before = await readStream(
      await postRun(first.url, alice, input),
      (events) => events.filter((one) => one.event.type === EventType.TEXT_MESSAGE_CONTENT).length >= 3,
    );
    process.kill(first.process.pid, 'SIGKILL');
    await first.process.exited;
    const second = await serve();
    try {
      const lastId = before.filter((one) => one.id !== undefined).at(-1)!.id!;
      const after = await readStream(await postRun(second.url, alice, input, lastId));
      // Killed mid-answer: the first gateway sent some of the tokens, the second the rest, none twice.
      expect(textOf(before).length).toBeGreaterThan(0);
      expect(textOf(after).length).toBeGreaterThan(0);
      expect(textOf(before) + textOf(after)).toBe(words.join(''));
      // The re-attached stream stands on its own: it starts the run and the open message again.
      expect(typesOf(after)).toEqual([
        'RUN_STARTED',
        'STATE_SNAPSHOT',
        'STEP_STARTED',
        'TEXT_MESSAGE_START',
        'TEXT_MESSAGE_CONTENT',
        'TEXT_MESSAGE_END',
        'STEP_FINISHED',
        'STATE_SNAPSHOT',
        'RUN_FINISHED',
      ]);
      await verified(after);
      // The ids only grow, across both streams.
      const ids = [...before, ...after].flatMap((one) => (one.id === undefined ? [] : [Number(one.id)]));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      // Read again from the start, the ended run tells the same events with the same ids.
      const again = await readStream(await postRun(second.url, alice, input, '0'));
      expect(textOf(again)).toBe(words.join(''));
      await verified(again);
      // No one else reaches the thread: bob's thread of the same name is another (and has no run).
      const theirs = await postRun(second.url, bob, input, lastId);
      expect(theirs.status).toBe(404);
    } finally {
      await second.process.stop();
    }
  });

  it('kill -9 of the worker mid-answer: the AG-UI client gets every delta once, the answer once', async () => {
    const crash = await crashGateway(keysFile, agents[0]!, ['recovered ', 'answer']);
    try {
      const input = userInput(`thread-${randomUUID()}`, 'hello');
      const seen: Streamed[] = [];
      const streaming = postRun(crash.url, alice, input).then((answer) => readStream(answer, undefined, seen));
      // Killed once the client has the first attempt's words.
      await eventually(
        () => (textOf(seen) === 'partial ' ? true : undefined),
        60_000,
        "the first attempt's words to reach the client",
      );
      await crash.killWorker();
      const events = await streaming;
      await verified(events);
      expect(events.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', result: 'recovered answer' });
      // The killed attempt's words are a message marked superseded: the messages that stand hold the
      // answer once.
      expect(textOf(events)).toBe('partial recovered answer');
      expect(standingMessages(events)).toEqual(['recovered answer']);
      expect(crash.fake.requests).toHaveLength(2);
    } finally {
      await crash.close();
    }
  });

  it("two runs posted at once on a new thread: each stream tells its own message's turn", async ({ world }) => {
    const gateway = await gatewayOf(world);
    const threadId = `thread-${randomUUID()}`;
    world.fake.enqueue(reply('Answer A.'), reply('Answer B.'));
    const [first, second] = await Promise.all(
      ['Question one?', 'Question two?'].map(async (question) => ({
        question,
        answer: await postRun(gateway.url, alice, userInput(threadId, question)),
      })),
    );
    const outcomes = await Promise.all(
      [first!, second!].map(async ({ question, answer }) => {
        expect(answer.status).toBe(200);
        const events = await readStream(answer);
        await verified(events);
        return { question, result: events.at(-1)!.event['result'] };
      }),
    );
    // The model answered the questions in the order the thread took them; each stream has its own answer.
    const asked = world.fake.requests.slice(-2).map((request) => request.body.messages.at(-1)!.content);
    const answerOf = new Map([
      [asked[0], 'Answer A.'],
      [asked[1], 'Answer B.'],
    ]);
    for (const { question, result } of outcomes) expect(result).toBe(answerOf.get(question));
  });

  it('close ends the thread’s session (it no longer counts as going on); its next message goes on from the conversation', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const threadId = `thread-${randomUUID()}`;
    world.fake.enqueue(reply('Paris.'), reply('Still Paris.'));
    const first = await readStream(await postRun(gateway.url, alice, userInput(threadId, 'Capital of France?')));
    expect(first.at(-1)!.event).toMatchObject({ result: 'Paris.' });
    const closing = await fetch(`${gateway.url}/ag-ui/assistant/close`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ threadId }),
    });
    expect(await closing.json()).toEqual({ closed: true });
    const session = world.client.session(threadSessionId(`alice-${tag}`, 'assistant', threadId));
    expect((await session.sessionResult()).turns).toBe(1);
    const next = await readStream(await postRun(gateway.url, alice, userInput(threadId, 'Sure?')));
    expect(next.at(-1)!.event).toMatchObject({ result: 'Still Paris.' });
    expect(world.fake.requests.at(-1)!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'Capital of France?' },
      { role: 'assistant', content: 'Paris.' },
      { role: 'user', content: 'Sure?' },
    ]);
    expect((await session.workflow.describe()).status.name).toBe('RUNNING');
  });

  it('cancel aborts the run in progress: its stream ends cancelled, and the thread goes on', async ({ world }) => {
    const gateway = await gatewayOf(world);
    const threadId = `thread-${randomUUID()}`;
    world.fake.enqueue(reply(['slow ', 'words ', 'that ', 'never ', 'end '], { chunkDelayMs: 5000 }), reply('Next.'));
    const streaming = postRun(gateway.url, alice, userInput(threadId, 'Talk.')).then((answer) => readStream(answer));
    // Cancelled while the model streams: a cancel before the request reaches the model would leave its reply queued.
    await eventually(() => {
      const talk = world.fake.requests.find((request) => request.body.messages.at(-1)?.content === 'Talk.');
      return (talk?.chunksWritten ?? 0) >= 1 ? true : undefined;
    });
    const cancelled = await eventuallyCancelled(gateway.url, threadId);
    expect(cancelled).toEqual({ cancelled: true });
    const events = await streaming;
    await verified(events);
    expect(events.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
    const next = await readStream(await postRun(gateway.url, alice, userInput(threadId, 'Again.')));
    expect(next.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', result: 'Next.' });
    const idle = await fetch(`${gateway.url}/ag-ui/assistant/cancel`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ threadId }),
    });
    expect(await idle.json()).toEqual({ cancelled: false, message: 'no run of this thread is in progress' });
  });

  it('examples/ag-ui-chat in Chromium: a conversation, a reload while an approval waits, the approval answered on the page', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const chat = await startChatPage(gateway.url, alice);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(chat.url);
      world.fake.enqueue(
        reply('Paris is the capital of France.'),
        callTools([toolCall('page-pay', 'transfer', { to: 'cy', amount: 7 })]),
        reply('Sent 7 to cy.'),
        reply('You paid cy 7.'),
      );
      await ask(page, 'What is Paris?', { answer: 'Paris is the capital of France.' });
      await ask(page, 'Pay cy 7.', 'approval');
      expect(await page.locator('.approval p').textContent()).toBe(
        'The agent asks: transfer {"to":"cy","amount":7}: approve?',
      );
      expect(transfers.filter((one) => one.to === 'cy')).toEqual([]);
      // Reloaded while the run waits: the page connects, and has the conversation and the question again.
      await page.reload();
      await page.locator('.approval').waitFor();
      expect(await page.locator('#messages .message').allTextContents()).toEqual([
        'What is Paris?',
        'Paris is the capital of France.',
        'Pay cy 7.',
        '→ transfer {"to":"cy","amount":7}',
      ]);
      await answerApproval(page, true, 'Sent 7 to cy.');
      expect(transfers.filter((one) => one.to === 'cy')).toEqual([{ to: 'cy', amount: 7 }]);
      expect(await page.locator('#messages .message').allTextContents()).toEqual([
        'What is Paris?',
        'Paris is the capital of France.',
        'Pay cy 7.',
        '→ transfer {"to":"cy","amount":7}',
        '← sent 7 to cy',
        'Sent 7 to cy.',
      ]);
      // The key stayed with the page's server; a reload keeps the thread, and the agent remembers it.
      expect(await page.content()).not.toContain(alice);
      await page.reload();
      await page.locator('.message.assistant', { hasText: 'Sent 7 to cy.' }).waitFor();
      await ask(page, 'What did I pay?', { answer: 'You paid cy 7.' });
      expect(
        world.fake.requests
          .at(-1)!
          .body.messages.slice(1)
          .map((message) => message.role),
      ).toEqual(['user', 'assistant', 'user', 'assistant', 'tool', 'assistant', 'user']);
    } finally {
      await browser.close();
      await chat.stop();
    }
  });

  it("docs/ag-ui.md's curl and @ag-ui/client examples, run as written (at this gateway's address)", async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    world.fake.enqueue(
      reply('Paris.'),
      callTools([toolCall('doc-pay', 'transfer', { to: 'bob', amount: 5 })]),
      reply('Sent 5 to bob.'),
    );
    const curl = await runProcess('bash', ['-c', documented('sh', gateway.url)[0]!], { KEY: alice });
    expect(curl.code).toBe(0);
    const lines = curl.stdout.split('\n').filter((line) => line.startsWith('data: '));
    await verified(lines.map((line) => ({ id: undefined, event: JSON.parse(line.slice(6)) as Streamed['event'] })));
    expect(JSON.parse(lines[0]!.slice(6))).toEqual({
      type: 'RUN_STARTED',
      threadId: 'thread-1',
      runId: 'run-1',
      protocolVersion: '1.0',
    });
    expect(JSON.parse(lines.at(-1)!.slice(6))).toEqual({
      type: 'RUN_FINISHED',
      threadId: 'thread-1',
      runId: 'run-1',
      outcome: { type: 'success' },
      result: 'Paris.',
    });
    // The TypeScript example, from a file in this checkout (where @ag-ui/client is installed).
    const scratch = join(repositoryRoot, 'scratch');
    mkdirSync(scratch, { recursive: true });
    const script = join(scratch, `ag-ui-example-${randomUUID()}.mts`);
    writeFileSync(script, documented('ts', gateway.url)[0]!);
    try {
      const example = await runProcess(join(repositoryRoot, 'node_modules/.bin/tsx'), [script], { KEY: alice });
      expect({ code: example.code, stderr: example.stderr }).toEqual({ code: 0, stderr: '' });
      expect(example.stdout).toBe('asks: transfer {"to":"bob","amount":5}: approve?\nanswer: Sent 5 to bob.\n');
    } finally {
      rmSync(script, { force: true });
    }
    expect(transfers.filter((one) => one.to === 'bob').length).toBeGreaterThan(0);
  });

  it('refuses, before anything runs: no key, an unknown agent, a bad body, a last message not the user’s', async ({
    world,
  }) => {
    const gateway = await gatewayOf(world);
    const threadId = `thread-${randomUUID()}`;
    const none = await fetch(`${gateway.url}/ag-ui/assistant`, { method: 'POST', body: '{}' });
    expect(none.status).toBe(401);
    const unknown = await fetch(`${gateway.url}/ag-ui/nobody`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(userInput(threadId, 'Hi')),
    });
    expect(unknown.status).toBe(404);
    const bad = await postRun(gateway.url, alice, { threadId });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^runId: /);
    const assistantLast = await postRun(gateway.url, alice, {
      threadId,
      runId: 'r1',
      messages: [{ id: 'a1', role: 'assistant', content: 'Hi' }],
    });
    expect(assistantLast.status).toBe(400);
    const noThread = await postRun(gateway.url, alice, { ...userInput(threadId, 'x'), resume: [] }, '12');
    expect(noThread.status).toBe(404);
    const badId = await postRun(gateway.url, alice, userInput(threadId, 'x'), 'abc');
    expect(badId.status).toBe(400);
    // None of these started the thread.
    const session = world.client.session(threadSessionId(`alice-${tag}`, 'assistant', threadId));
    await expect(session.workflow.describe()).rejects.toThrow(/not found/i);
  });
});

/** Cancels the thread's run once it is in progress (a cancel before the turn began finds nothing to abort). */
function eventuallyCancelled(url: string, threadId: string): Promise<unknown> {
  return eventually(
    async () => {
      const answer = await fetch(`${url}/ag-ui/assistant/cancel`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ threadId }),
      });
      const body = (await answer.json()) as { cancelled?: boolean };
      return body.cancelled ? body : undefined;
    },
    60_000,
    'the run to be in progress',
  );
}
