import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect } from 'vitest';
import { reply, type FakeStep } from '../../src/fake-model/steps';
import { createKey } from '../../src/gateway/keys';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import { it, type StartWorld } from '../support/fixtures';
import type { TestWorld } from '../support/temporal';
import { eventually } from '../support/wait';

const agents = [{ name: 'assistant', instructions: 'You answer briefly.' }];
const usage = { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 };

/** A world whose fake model plays `script`, and a gateway in front of its client with two principals' keys. */
async function gatewayWorld(startWorld: StartWorld, script: FakeStep[]) {
  const world = await startWorld({ agents, fake: { script } });
  const keysFile = join(mkdtempSync(join(tmpdir(), 'responses-keys-')), 'keys.json');
  const key = createKey(keysFile, 'billing').key;
  const otherKey = createKey(keysFile, 'ops').key;
  const lines: string[] = [];
  const serve = async () => {
    const { app } = createPatchloopGateway({ client: world.client, keysFile, agents, log: (line) => lines.push(line) });
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
});
