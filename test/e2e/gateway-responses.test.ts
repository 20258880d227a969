import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect } from 'vitest';
import { callTools, reply, type FakeStep } from '../../src/fake-model/steps';
import { addTool } from '../../src/tools/examples';
import { createKey } from '../../src/gateway/keys';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import { randomUUID } from 'node:crypto';
import { FakeModelServer } from '../../src/fake-model/server';
import { spawnWorker } from '../../support/worker-process';
import { it, type StartWorld } from '../support/fixtures';
import { clientOn, temporalAddress, type TestWorld } from '../support/temporal';
import { startGatewayProcess } from '../support/cli';
import { eventOf, eventually } from '../support/wait';
import { repositoryRoot } from '../../support/repository';

const agents = [{ name: 'assistant', instructions: 'You answer briefly.' }];
const usage = { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 };

/** A world whose fake model plays `script`, and a gateway in front of its client with two principals' keys. */
async function gatewayWorld(
  startWorld: StartWorld,
  script: FakeStep[],
  options: { limits?: { runsPerMinute: number }; withAdd?: boolean } = {},
) {
  const world = await startWorld({
    agents: options.withAdd ? [{ ...agents[0]!, tools: ['add'] }] : agents,
    fake: { script },
    ...(options.withAdd ? { tools: [addTool] } : {}),
  });
  const keysFile = join(mkdtempSync(join(tmpdir(), 'responses-keys-')), 'keys.json');
  const key = createKey(keysFile, 'billing').key;
  const otherKey = createKey(keysFile, 'ops').key;
  const lines: string[] = [];
  const serve = async () => {
    const { app } = createPatchloopGateway({
      client: world.client,
      keysFile,
      agents,
      log: (line) => lines.push(line),
      ...(options.limits ? { limits: options.limits } : {}),
    });
    return listen(app, '127.0.0.1', 0);
  };
  const server = await serve();
  const openai = (url: string, apiKey = key) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
  return { world, server, serve, key, otherKey, openai, lines };
}

type StreamedEvent = { type: string; sequence_number: number; delta?: string };

/** The events of a stream as the client saw them, with their text. */
async function collect(stream: AsyncIterable<StreamedEvent>, until?: (events: StreamedEvent[]) => boolean) {
  const events: StreamedEvent[] = [];
  for await (const event of stream) {
    events.push(event);
    if (until?.(events)) break;
  }
  return events;
}
const textOf = (events: StreamedEvent[]) =>
  events
    .filter((event) => event.type === 'response.output_text.delta')
    .map((event) => event.delta)
    .join('');
/** The event types with a run of deltas shown once (how tokens are cut is the model's business). */
const shapeOf = (events: StreamedEvent[]) =>
  events
    .map((event) => event.type)
    .filter((type, at, types) => type !== 'response.output_text.delta' || types[at - 1] !== type);
const ONE_ANSWER = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];
const increasing = (events: StreamedEvent[]) =>
  events.every((event, at) => at === 0 || event.sequence_number > events[at - 1]!.sequence_number);

async function runsOf(world: TestWorld, principal: string) {
  return world.client.listRuns({ principal, limit: 100 });
}

describe('the Responses API, served by the gateway', () => {
  it('create: the agent answers as a response (official Node client), its id the run', async ({ startWorld }) => {
    const { server, openai, world } = await gatewayWorld(startWorld, [reply('Paris is the capital.', { usage })]);
    const response = await openai(server.url).responses.create({ model: 'assistant', input: 'Capital of France?' });
    expect(response.id).toMatch(/^resp_[a-f0-9]{32}$/);
    expect(response.status).toBe('completed');
    expect(response.model).toBe('assistant');
    expect(response.output_text).toBe('Paris is the capital.');
    expect(response.output).toEqual([
      {
        id: `msg_${response.id}_1`,
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Paris is the capital.', annotations: [], logprobs: [] }],
      },
    ]);
    expect(response.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 16,
    });
    // The run is the response: started for the key's principal, with the question as its input.
    const result = await world.client.run(response.id).result();
    expect(result.answer).toBe('Paris is the capital.');
    expect((await runsOf(world, 'billing')).map((run) => run.workflow_id)).toContain(response.id);
    expect(world.fake.requests[0]!.body.messages.at(-1)).toEqual({ role: 'user', content: 'Capital of France?' });
    await server.close();
  });

  it("stream: the run's tokens as Responses streaming events, in order", async ({ startWorld }) => {
    const chunks = ['Durable ', 'agents ', 'keep ', 'going.'];
    const { server, openai } = await gatewayWorld(startWorld, [
      reply(chunks, { usage, firstChunkDelayMs: 500, chunkDelayMs: 200 }),
    ]);
    const stream = await openai(server.url).responses.create({ model: 'assistant', input: 'Tell me.', stream: true });
    const events = (await collect(stream as AsyncIterable<StreamedEvent>)) as Array<
      StreamedEvent & Record<string, unknown>
    >;
    expect(shapeOf(events)).toEqual(ONE_ANSWER);
    expect(textOf(events)).toBe('Durable agents keep going.');
    expect(increasing(events)).toBe(true);
    // Live: the tokens came as they were made, not as one piece at the end.
    expect(events.filter((event) => event.type === 'response.output_text.delta').length).toBeGreaterThan(1);
    const done = events.at(-1)!['response'] as OpenAI.Responses.Response;
    expect(done.status).toBe('completed');
    expect(done.output_text ?? (done.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0]).toBeDefined();
    expect(events.find((event) => event.type === 'response.output_text.done')!['text']).toBe(
      'Durable agents keep going.',
    );
    expect(done.usage?.total_tokens).toBe(16);
    await server.close();
  });

  it('background: answers at once, then retrieve polls it to completion', async ({ startWorld }) => {
    const { server, openai } = await gatewayWorld(startWorld, [
      reply('Done in the background.', { usage, firstChunkDelayMs: 500 }),
    ]);
    const client = openai(server.url);
    const started = await client.responses.create({ model: 'assistant', input: 'Work.', background: true });
    expect(started.status).toBe('queued');
    expect(started.background).toBe(true);
    expect(started.output).toEqual([]);
    const finished = await eventually(async () => {
      const polled = await client.responses.retrieve(started.id);
      return polled.status === 'completed' ? polled : undefined;
    });
    expect(finished.output_text).toBe('Done in the background.');
    expect(finished.usage?.total_tokens).toBe(16);
    await server.close();
  });

  it('previous_response_id continues the conversation: the new run has the earlier turn as history', async ({
    startWorld,
  }) => {
    const { server, openai, world } = await gatewayWorld(startWorld, [
      reply('Hello Ada.', { usage }),
      reply('Your name is Ada.', { usage }),
    ]);
    const client = openai(server.url);
    const first = await client.responses.create({ model: 'assistant', input: 'My name is Ada.' });
    const second = await client.responses.create({
      model: 'assistant',
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    expect(second.output_text).toBe('Your name is Ada.');
    expect(second.previous_response_id).toBe(first.id);
    // One system message, the agent's own: the earlier run's is not carried over (conversationAfter).
    expect(world.fake.requests[1]!.body.messages).toEqual([
      world.fake.requests[0]!.body.messages[0],
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'Hello Ada.' },
      { role: 'user', content: 'What is my name?' },
    ]);
    await server.close();
  });

  it('cancel aborts the run, and again changes nothing', async ({ startWorld }) => {
    const { server, openai, world } = await gatewayWorld(startWorld, [
      { kind: 'hang', chunks: ['Working ', 'on it'], chunkDelayMs: 50 },
    ]);
    const client = openai(server.url);
    const started = await client.responses.create({ model: 'assistant', input: 'Work long.', background: true });
    await eventOf(world.client.run(started.id), 'llm_call_start');
    const cancelled = await client.responses.cancel(started.id);
    expect(cancelled.status).toBe('cancelled');
    const again = await client.responses.cancel(started.id);
    expect(again.status).toBe('cancelled');
    expect(again.output).toEqual(cancelled.output);
    expect((await world.client.run(started.id).result()).status).toBe('aborted');
    expect((await client.responses.retrieve(started.id)).status).toBe('cancelled');
    await server.close();
  });

  it("bad input gets OpenAI's error shape and starts nothing: malformed JSON, unknown model, oversized input, a wrong key, another principal's response", async ({
    startWorld,
  }) => {
    const { server, openai, world, key, otherKey, lines } = await gatewayWorld(startWorld, [reply('Mine.', { usage })]);
    const mine = await openai(server.url).responses.create({ model: 'assistant', input: 'Hi.' });
    const raw = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: '{"model": "assistant", "input": ',
    });
    expect(raw.status).toBe(400);
    const malformed = (await raw.json()) as { error: Record<string, unknown> };
    expect(malformed.error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_json' });
    expect(malformed.error['message']).toMatch(/^The body is not valid JSON: /);
    const refused = async (call: Promise<unknown>) => {
      const error = (await call.then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as InstanceType<typeof OpenAI.APIError>;
      return { status: error.status, error: error.error };
    };
    expect(await refused(openai(server.url).responses.create({ model: 'nosuchagent', input: 'Hi.' }))).toEqual({
      status: 404,
      error: {
        message: "The model 'nosuchagent' does not exist: this gateway serves the agents assistant",
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      },
    });
    expect(
      await refused(openai(server.url).responses.create({ model: 'assistant', input: 'x'.repeat(1_100_000) })),
    ).toEqual({
      status: 413,
      error: {
        message: 'The body is larger than 1048576 bytes.',
        type: 'invalid_request_error',
        param: null,
        code: 'request_too_large',
      },
    });
    expect(
      await refused(
        openai(server.url, `pl_000000000000_${'A'.repeat(32)}`).responses.create({ model: 'assistant', input: 'Hi.' }),
      ),
    ).toEqual({
      status: 401,
      error: { message: 'the API key is not valid', type: 'invalid_api_key', param: null, code: 'invalid_api_key' },
    });
    const theirs = openai(server.url, otherKey);
    const notFound = {
      status: 404,
      error: {
        message: `No response found with id '${mine.id}'.`,
        type: 'invalid_request_error',
        param: null,
        code: 'not_found',
      },
    };
    expect(await refused(theirs.responses.retrieve(mine.id))).toEqual(notFound);
    expect(await refused(theirs.responses.cancel(mine.id))).toEqual(notFound);
    expect(
      await refused(theirs.responses.create({ model: 'assistant', input: 'Go on.', previous_response_id: mine.id })),
    ).toEqual({ ...notFound, error: { ...notFound.error, param: 'previous_response_id' } });
    expect(
      await refused(
        openai(server.url).responses.create({ model: 'assistant', input: 'Hi.', instructions: 'Be rude.' }),
      ),
    ).toEqual({
      status: 400,
      error: {
        message: "'instructions' is not supported: the agent's definition decides it",
        type: 'invalid_request_error',
        param: 'instructions',
        code: 'unsupported_parameter',
      },
    });
    expect(
      await refused(openai(server.url).responses.create({ model: 'assistant', input: 'Hi.', store: false })),
    ).toEqual({
      status: 400,
      error: {
        message: "'store: false' is not supported: every run is kept (it is durable)",
        type: 'invalid_request_error',
        param: 'store',
        code: 'unsupported_parameter',
      },
    });
    // Nothing started, nothing changed: one run (the first), its answer intact, the model asked once.
    expect(lines.filter((line) => line.includes(' started '))).toEqual([
      `responses: billing started ${mine.id} (agent assistant)`,
    ]);
    expect(world.fake.requests).toHaveLength(1);
    expect((await openai(server.url).responses.retrieve(mine.id)).output_text).toBe('Mine.');
    await server.close();
  });

  it('the Python openai client streams a response and polls a background one', async ({ startWorld }) => {
    const { server, key } = await gatewayWorld(startWorld, [
      reply(['From ', 'Python.'], { usage, firstChunkDelayMs: 300, chunkDelayMs: 200 }),
      reply('Polled.', { usage, firstChunkDelayMs: 300 }),
    ]);
    const python = (mode: string, question: string) =>
      new Promise<string>((resolve, reject) =>
        execFile(
          join(repositoryRoot, '.venv', 'bin', 'python'),
          [join(repositoryRoot, 'test', 'support', 'responses_client.py'), `${server.url}/v1`, key, mode, question],
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
        ),
      );
    const streamed = (await python('stream', 'Hi from Python.'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as StreamedEvent);
    expect(shapeOf(streamed)).toEqual(ONE_ANSWER);
    expect(textOf(streamed)).toBe('From Python.');
    expect(increasing(streamed)).toBe(true);
    const polled = (await python('background', 'Poll me.')).trim().split('\n');
    expect(JSON.parse(polled[0]!)).toEqual({ status: 'queued' });
    expect(JSON.parse(polled.at(-1)!)).toEqual({ status: 'completed', output_text: 'Polled.' });
    await server.close();
  });

  it('a background stream resumed with starting_after after the gateway process was killed: every event once', async ({
    startWorld,
  }) => {
    const words = Array.from({ length: 12 }, (_, index) => `word${index} `);
    const { world, openai, server } = await gatewayWorld(startWorld, [
      reply(words, { usage, firstChunkDelayMs: 300, chunkDelayMs: 300 }),
    ]);
    await server.close();
    const folder = mkdtempSync(join(tmpdir(), 'responses-serve-'));
    const agentsFile = join(folder, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify(agents));
    const keysFile = join(folder, 'keys.json');
    const key = createKey(keysFile, 'billing').key;
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const serve = () => startGatewayProcess(agentsFile, keysFile, env);
    const first = await serve();
    const stream = await openai(first.url, key).responses.create({
      model: 'assistant',
      input: 'Count.',
      background: true,
      stream: true,
    });
    const before = await collect(
      stream as AsyncIterable<StreamedEvent>,
      (events) => events.filter((event) => event.type === 'response.output_text.delta').length >= 3,
    );
    process.kill(first.process.pid, 'SIGKILL');
    await first.process.exited;
    const id = (before[0] as unknown as { response: { id: string } }).response.id;
    const second = await serve();
    const resumed = await openai(second.url, key).responses.retrieve(id, {
      stream: true,
      starting_after: before.at(-1)!.sequence_number,
    });
    const after = await collect(resumed as AsyncIterable<StreamedEvent>);
    // Killed mid-answer: the first gateway sent some of its tokens, the second the rest.
    expect(textOf(before).length).toBeGreaterThan(0);
    expect(textOf(after).length).toBeGreaterThan(0);
    const whole = [...before, ...after];
    expect(textOf(whole)).toBe(words.join(''));
    expect(shapeOf(whole)).toEqual(ONE_ANSWER);
    expect(increasing(whole)).toBe(true);
    // Read again from the start, the ended run tells the same events with the same numbers.
    const again = await collect(
      (await openai(second.url, key).responses.retrieve(id, { stream: true })) as AsyncIterable<StreamedEvent>,
    );
    expect(textOf(again)).toBe(words.join(''));
    const numbers = (events: StreamedEvent[]) =>
      events
        .filter((event) => event.type !== 'response.output_text.delta')
        .map((event) => [event.type, event.sequence_number]);
    expect(numbers(again)).toEqual(numbers(whole));
    await second.process.stop();
  });

  it("the curl and Python examples of docs/gateway.md, run as written (against this gateway's address)", async ({
    startWorld,
  }) => {
    const { server, key } = await gatewayWorld(startWorld, [
      reply('Paris.', { usage }),
      reply('Paris.', { usage }),
      reply(['One, ', 'two, ', 'three, ', 'four, ', 'five.'], { usage, firstChunkDelayMs: 300, chunkDelayMs: 200 }),
    ]);
    const page = readFileSync(join(repositoryRoot, 'docs', 'gateway.md'), 'utf8');
    const section = page.slice(page.indexOf('## The Responses API'));
    const block = (language: string) =>
      new RegExp('```' + language + '\\n([\\s\\S]*?)```')
        .exec(section)![1]!
        .replaceAll('http://127.0.0.1:8400', server.url);
    const run = (program: string, args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(program, args, { env: { ...process.env, KEY: key } }, (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
        ),
      );
    const answered = JSON.parse(await run('bash', ['-c', block('sh')])) as OpenAI.Responses.Response;
    expect(answered.status).toBe('completed');
    expect(answered.output).toEqual([
      expect.objectContaining({ content: [expect.objectContaining({ type: 'output_text', text: 'Paris.' })] }),
    ]);
    const python = await run(join(repositoryRoot, '.venv', 'bin', 'python'), ['-c', block('python')]);
    expect(python).toBe('Paris.\nOne, two, three, four, five.\nresponse.completed\n');
    await server.close();
  });

  it('a run that calls a tool first streams one message, its answer; its output holds that message only', async ({
    startWorld,
  }) => {
    const { server, openai, world } = await gatewayWorld(
      startWorld,
      [
        callTools([{ id: 'call_1', name: 'add', arguments: '{"a": 1, "b": 2}' }], { usage }),
        reply(['The sum ', 'is 3.'], { usage, firstChunkDelayMs: 300, chunkDelayMs: 200 }),
      ],
      { withAdd: true },
    );
    const stream = await openai(server.url).responses.create({ model: 'assistant', input: '1 + 2?', stream: true });
    const events = await collect(stream as AsyncIterable<StreamedEvent>);
    expect(shapeOf(events)).toEqual(ONE_ANSWER);
    expect(textOf(events)).toBe('The sum is 3.');
    const id = (events[0] as unknown as { response: { id: string } }).response.id;
    const response = await openai(server.url).responses.retrieve(id);
    expect(response.output_text).toBe('The sum is 3.');
    expect(response.output.map((item) => item.id)).toEqual([`msg_${id}_2`]);
    expect(response.usage?.total_tokens).toBe(32);
    expect(
      (await world.client.run(id).result()).transcript.filter((message) => message['role'] === 'tool'),
    ).toHaveLength(1);
    await server.close();
  });

  it("a start over the principal's limit gets 429 with Retry-After in OpenAI's shape, and starts nothing", async ({
    startWorld,
  }) => {
    const { server, key, world } = await gatewayWorld(startWorld, [reply('One.', { usage })], {
      limits: { runsPerMinute: 1 },
    });
    const post = () =>
      fetch(`${server.url}/v1/responses`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'assistant', input: 'Hi.' }),
      });
    expect((await post()).status).toBe(200);
    const refused = await post();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({
      error: {
        message: 'billing started 1 runs in the last minute (the limit is 1)',
        type: 'rate_limit_exceeded',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    expect(world.fake.requests).toHaveLength(1);
    await server.close();
  });

  it("a stream goes on through a kill -9 of the worker: the retried call's tokens are not sent twice", async ({
    onTestFinished,
  }) => {
    const fake = await FakeModelServer.start({
      script: [
        { kind: 'hang', chunks: ['Steady ', 'answer '], chunkDelayMs: 100 },
        reply(['Steady ', 'answer ', 'after ', 'a crash.'], { usage, firstChunkDelayMs: 300, chunkDelayMs: 200 }),
      ],
    });
    const taskQueue = `responses-crash-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    const crashAgents = [{ ...agents[0]!, limits: { heartbeat_timeout_seconds: 2 } }];
    const startWorker = () =>
      spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents: crashAgents });
    const workers = [await startWorker()];
    onTestFinished(async () => {
      for (const worker of workers) await worker.kill('SIGKILL');
      await client.close();
      await fake.close();
    });
    const keysFile = join(mkdtempSync(join(tmpdir(), 'responses-keys-')), 'keys.json');
    const key = createKey(keysFile, 'billing').key;
    const { app } = createPatchloopGateway({ client, keysFile, agents: crashAgents, log: () => undefined });
    const server = await listen(app, '127.0.0.1', 0);
    onTestFinished(() => server.close());
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
    const stream = await openai.responses.create({ model: 'assistant', input: 'Go.', stream: true, background: true });
    const events: StreamedEvent[] = [];
    for await (const streamed of stream as AsyncIterable<StreamedEvent>) {
      events.push(streamed);
      if (textOf(events) === 'Steady answer ' && workers.length === 1) {
        await workers[0]!.kill('SIGKILL');
        workers.push(await startWorker());
      }
    }
    expect(workers).toHaveLength(2);
    expect(textOf(events)).toBe('Steady answer after a crash.');
    expect(shapeOf(events)).toEqual(ONE_ANSWER);
    expect(increasing(events)).toBe(true);
    expect(fake.requests).toHaveLength(2);
  });
});
