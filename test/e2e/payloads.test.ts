import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { validateToolLinkage, type Message } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { exampleTools } from '../../src/tools/examples';
import { imageFile } from '../../src/tools/images';
import { NO_BOUNDS } from '../../src/runtime';
import { type TestWorld } from '../support/temporal';

const KB = 1024;
/** A `repeat` call whose result is `bytes` long (16 characters repeated; `times` is at most 10,000). */
const repeat = (id: string, bytes: number) => ({
  id,
  name: 'repeat',
  arguments: JSON.stringify({ text: 'abcdefghijklmnop', times: bytes / 16 }),
});
const toolResults = (transcript: Message[]) => transcript.filter((message) => message['role'] === 'tool');

async function historyOf(world: TestWorld, workflowId: string) {
  const run = world.client.run(workflowId);
  const history = await run.workflow.fetchHistory();
  const types = (history.events ?? []).map((event) => Number(event.eventType));
  // EVENT_TYPE_WORKFLOW_TASK_FAILED is 9: a payload over the limit shows up as a loop of these.
  return { bytes: (await run.historySize()).bytes, taskFailures: types.filter((type) => type === 9).length };
}

describe('payloads by reference (External Storage, the local directory by default)', () => {
  it('a run with 2.2 MB of tool output over 17 iterations completes; its history holds the new content once', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      fake: {
        script: [
          ...Array.from({ length: 17 }, (_, index) => callTools([repeat(`call_${index}`, 128 * KB)])),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'repeat a lot', budget: NO_BOUNDS });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const results = toolResults(result.transcript);
    expect(results).toHaveLength(17);
    expect(results.every((message) => String(message['content']).length === 128 * KB + 2)).toBe(true);
    validateToolLinkage(result.transcript);
    // The model really received all of it: the last request carries every result.
    expect(world.fake.requests.at(-1)!.body.messages.filter((message) => message['role'] === 'tool')).toHaveLength(17);
    const history = await historyOf(world, run.workflowId);
    expect(history.taskFailures).toBe(0);
    // Each 128 KB batch result is under the 256 KiB threshold and stays inline (the new content, once);
    // the 2.2 MB result goes by reference instead of being written a second time.
    expect(history.bytes).toBeGreaterThan(17 * 128 * KB);
    expect(history.bytes).toBeLessThan(17 * 128 * KB + 300 * KB);
    world.fake.assertDone();
  });

  it('one batch of 17 results of 128 KB and two 1 MiB images go by reference', async ({ startWorld }) => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-images-'));
    const files = [0, 1].map((index) => {
      const file = join(folder, `big-${index}.png`);
      writeFileSync(file, randomBytes(1024 * KB));
      return file;
    });
    const photo = defineTool({
      name: 'photo',
      description: 'A big photo.',
      parameters: z.object({ index: z.number().int() }),
      execute: ({ index }) => imageFile(files[index]!),
    });
    const world = await startWorld({
      tools: [...exampleTools, photo],
      agents: [
        {
          name: 'heavy',
          instructions: 'Fetch.',
          tools: ['repeat', 'photo'],
          limits: { max_image_bytes: 2 * 1024 * KB },
        },
      ],
      fake: {
        script: [
          callTools([
            ...Array.from({ length: 17 }, (_, index) => repeat(`r${index}`, 128 * KB)),
            { id: 'p0', name: 'photo', arguments: '{"index": 0}' },
            { id: 'p1', name: 'photo', arguments: '{"index": 1}' },
          ]),
          reply('seen it all'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'heavy', input: 'fetch everything', budget: NO_BOUNDS });
    const result = await run.result();
    expect(result.answer).toBe('seen it all');
    validateToolLinkage(result.transcript);
    const images = JSON.stringify(result.transcript).split('data:image/png;base64,').length - 1;
    expect(images).toBe(2);
    const lastRequest = JSON.stringify(world.fake.requests.at(-1)!.body);
    expect(lastRequest.split('data:image/png;base64,').length - 1).toBe(2);
    const history = await historyOf(world, run.workflowId);
    expect(history.taskFailures).toBe(0);
    expect(history.bytes).toBeLessThan(512 * KB);
    world.fake.assertDone();
  });

  it('a fork of a parent with 2.5 MB of context starts, and returns only what the parent uses', async ({
    startWorld,
  }) => {
    const history = Array.from({ length: 10 }, (_, index) => [
      { role: 'user' as const, content: `chunk ${index}: ${'x'.repeat(250 * KB)}` },
      { role: 'assistant' as const, content: `noted ${index}` },
    ]).flat();
    const world = await startWorld({
      agents: [{ name: 'memo', instructions: 'You delegate.', tools: [], selfref: true }],
      fake: {
        script: [
          callTools([{ id: 'fk', name: 'selfref_fork', arguments: '{"message": "summarise the chunks"}' }]),
          reply('ten chunks of x'),
          reply('the child says: ten chunks of x'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'delegate', history, budget: NO_BOUNDS });
    const result = await run.result();
    expect(result.answer).toBe('the child says: ten chunks of x');
    // The child saw the parent's whole context.
    expect(
      world.fake.requests[1]!.body.messages.filter((message) => String(message['content']).startsWith('chunk ')),
    ).toHaveLength(10);
    const forkResult = JSON.parse(String(toolResults(result.transcript)[0]!['content'])) as {
      status: string;
      result: string;
      history_count: number;
    };
    expect(forkResult).toMatchObject({ status: 'completed', result: 'ten chunks of x' });
    const child = await world.client.run(`${run.workflowId}::fork::1`).result();
    expect([child.transcript, child.transcript_omitted]).toEqual([[], true]);
    expect(child.transcript_length).toBeGreaterThanOrEqual(23);
    expect(forkResult.history_count).toBe(child.transcript_length);
    expect((await historyOf(world, run.workflowId)).taskFailures).toBe(0);
    world.fake.assertDone();
  });

  it('a session continues as new with 2.5 MB of context (carried by reference)', async ({ startWorld }) => {
    const world = await startWorld({
      fake: { responder: (body) => reply(`got ${body.messages.length} messages`) },
    });
    const session = await world.client.startSession({
      agent: 'assistant',
      continue_as_new: { max_history_events: 20 },
      budget: NO_BOUNDS,
    });
    for (let turn = 0; turn < 10; turn += 1) {
      const answer = await session.send(`turn ${turn}: ${'y'.repeat(250 * KB)}`);
      expect(answer).toMatchObject({ status: 'completed', turn: turn + 1, reply: `got ${2 + turn * 2} messages` });
    }
    const status = await session.status();
    expect((status as unknown as { continued_as_new: number }).continued_as_new).toBeGreaterThanOrEqual(2);
    expect(
      status.events.some(
        (event) => event.event_type === 'custom_event' && event.event_name === 'continue_as_new_skipped',
      ),
    ).toBe(false);
    expect((await session.transcript()).length).toBe(21);
  });
});

describe('without payload storage, every payload stays within budget', () => {
  const inline = { config: { payloadStorage: { kind: 'off' as const } } };

  it('a batch over one payload turns its largest results into error results; the run completes', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      ...inline,
      fake: {
        script: [
          callTools(Array.from({ length: 14 }, (_, index) => repeat(`r${index}`, 110 * KB))),
          reply('some were too large'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'repeat' });
    const result = await run.result();
    expect(result.answer).toBe('some were too large');
    const results = toolResults(result.transcript).map((message) => String(message['content']));
    // The budget is one payload's (1,500,000 bytes) less the reply's that carries the batch.
    const refused = results.filter((content) => /over the 14\d{5}-byte budget of one payload/.test(content));
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(results.filter((content) => content.length === 110 * KB + 2).length).toBe(14 - refused.length);
    validateToolLinkage(result.transcript);
    expect((await historyOf(world, run.workflowId)).taskFailures).toBe(0);
    world.fake.assertDone();
  });

  it('a result over the limit leaves its transcript out (read by pages) instead of failing the run', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      ...inline,
      fake: {
        script: [
          callTools(Array.from({ length: 8 }, (_, index) => repeat(`a${index}`, 120 * KB))),
          callTools(Array.from({ length: 8 }, (_, index) => repeat(`b${index}`, 120 * KB))),
          reply('too much to return'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'assistant', input: 'repeat' });
    const result = await run.result();
    expect(result.answer).toBe('too much to return');
    expect(result.transcript.filter((message) => message['role'] === 'tool')).toHaveLength(16);
    validateToolLinkage(result.transcript);
    // What history holds: the result without its 1.9 MB transcript, under the inline budget.
    const history = await run.workflow.fetchHistory();
    const payload = history.events!.at(-1)!.workflowExecutionCompletedEventAttributes!.result!.payloads![0]!;
    expect(payload.data!.length).toBeLessThan(1_500_000);
    expect(JSON.parse(Buffer.from(payload.data!).toString())).toMatchObject({
      transcript: [],
      transcript_omitted: true,
      transcript_length: result.transcript.length,
    });
    expect((await historyOf(world, run.workflowId)).taskFailures).toBe(0);
    world.fake.assertDone();
  });
});
