/**
 * `npm run bench:long`: runs and sessions of any length and size, side by side in one run.
 *
 * 1. A long `agentRun` (BENCH_ITERATIONS, default 10,000; fast fake model, 1 KB tool output): completes,
 *    continue-as-new count, the largest run of the chain (history events and bytes), worker heap at the
 *    start and the end, ms per iteration around iteration 100 and at the end.
 * 2. Large payloads: 20 MB of tool output in 128 KB results, and ten 1 MiB images, with payloads by
 *    reference (the 256 KiB default threshold, and 64 KiB) and inline (storage off): completes or how it
 *    fails, history bytes per iteration.
 * 3. A session of BENCH_TURNS turns (default 2,000) of 4 KB messages growing to 8 MB of context:
 *    continue-as-new count, its requests checked byte for byte against the conversation, turn overhead
 *    at turn 10 and at the end.
 *
 * 4. A windowed run: BENCH_ITERATIONS iterations of 4 KB tool output against a model with a 32,000-token
 *    window (`context.window_tokens` set): completes, requests over the window (must be 0),
 *    compactions, summary calls and their share of all tokens, ms per iteration at 100 and at the end
 *    (the request is bounded, so the ratio should stay near 1).
 *
 * BENCH_SCALE (default 1) scales all of them: 0.1 runs a tenth of each.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { z } from 'zod';
import type { PayloadStorageSettings } from '../src/config/environment';
import { promptTokens, type ChatRequestBody, type Responder } from '../src/fake-model/server';
import { isSummaryCall, sevenFieldSummary } from '../support/context-model';
import { callTools, reply, type FakeStep } from '../src/fake-model/steps';
import { defineTool } from '../src/tools/define-tool';
import { exampleTools } from '../src/tools/examples';
import { imageFile } from '../src/tools/images';
import { median, table } from './report';
import { startBenchWorld, type BenchWorld } from './world';

const SCALE = Number(process.env['BENCH_SCALE'] ?? 1);
const ITERATIONS = Math.round(Number(process.env['BENCH_ITERATIONS'] ?? 10_000) * SCALE);
const TURNS = Math.round(Number(process.env['BENCH_TURNS'] ?? 2_000) * SCALE);
const KB = 1024;

const gc = () => (globalThis as { gc?: () => void }).gc?.();
const heapMb = () => (gc(), process.memoryUsage().heapUsed / 2 ** 20);
const toolResults = (body: ChatRequestBody) => body.messages.filter((message) => message['role'] === 'tool').length;
/** Images come back as user messages with image parts (spec 10.c), not as tool messages. */
const imagesSeen = (body: ChatRequestBody) =>
  body.messages.filter((message) => message['role'] === 'user' && Array.isArray(message['content'])).length;

/** Calls `repeat` (`bytes` of output) until `iterations` results are in, then answers. */
function repeater(iterations: number, bytes: number): Responder {
  return (body) => {
    const done = toolResults(body);
    if (done >= iterations) return reply('done');
    const args = JSON.stringify({ text: 'abcdefghijklmnop', times: bytes / 16 });
    return callTools([{ id: `call_${done}`, name: 'repeat', arguments: args }]);
  };
}

/** The runs of a workflow id's continue-as-new chain, with their history sizes. */
async function chain(world: BenchWorld, workflowId: string) {
  const runs: Array<{ events: number; bytes: number }> = [];
  for await (const execution of world.client.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const description = await world.client.temporal.workflow.getHandle(workflowId, execution.runId).describe();
    runs.push({ events: description.historyLength, bytes: description.historySize ?? 0 });
  }
  return runs;
}

/** Mean ms between consecutive model requests in [from, to). */
function msPerIteration(world: BenchWorld, from: number, to: number): number {
  const times = world.fake.requests.slice(from, to).map((request) => request.receivedAt);
  return times.length < 2 ? NaN : (times.at(-1)! - times[0]!) / (times.length - 1);
}

/** Median ms between consecutive model requests in [from, to): a continue-as-new in the window does not move it. */
function medianMsPerIteration(world: BenchWorld, from: number, to: number): number {
  const times = world.fake.requests.slice(from, to).map((request) => request.receivedAt);
  return median(times.slice(1).map((time, index) => time - times[index]!));
}

/**
 * What any system pays per model call at this context size, without a workflow: the openai client
 * sending the final transcript (streamed, as the run does) to the same fake model. Median of 5, ms.
 */
async function requestFloor(world: BenchWorld, messages: unknown[]): Promise<number> {
  const client = new OpenAI({ baseURL: world.fake.url, apiKey: 'bench', maxRetries: 0 });
  const samples: number[] = [];
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const started = performance.now();
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: messages as OpenAI.ChatCompletionMessageParam[],
      stream: true,
    });
    for await (const chunk of stream) void chunk;
    samples.push(performance.now() - started);
  }
  return median(samples);
}

async function longRun(): Promise<string> {
  const world = await startBenchWorld(repeater(ITERATIONS, KB), { keepBodies: false });
  try {
    const heapStart = heapMb();
    const started = Date.now();
    const run = await world.client.start(
      { agent: 'assistant', input: 'repeat forever' },
      { workflowId: `long-${started}` },
    );
    const progress = setInterval(
      () => process.stderr.write(`long run: ${world.fake.requests.length}/${ITERATIONS + 1} calls\n`),
      30_000,
    );
    const result = await run.result().finally(() => clearInterval(progress));
    const heapEnd = heapMb();
    const runs = await chain(world, run.workflowId);
    const largest = runs.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    const results = result.transcript.filter((message) => message['role'] === 'tool').length;
    const floor = await requestFloor(world, result.transcript);
    return table(
      [
        'iterations',
        'completed',
        'tool results',
        'continued as new',
        'largest run events',
        'largest run bytes',
        'heap start MB',
        'heap end MB',
        'ms/iter @100 (median)',
        `ms/iter @${ITERATIONS} (median)`,
        `ms/iter @${ITERATIONS} (mean)`,
        `request floor ms @${ITERATIONS}`,
        'total s',
      ],
      [
        [
          String(ITERATIONS),
          String(result.status === 'completed'),
          String(results),
          String(runs.length - 1),
          String(largest.events),
          String(largest.bytes),
          heapStart.toFixed(0),
          heapEnd.toFixed(0),
          medianMsPerIteration(world, 50, 150).toFixed(1),
          medianMsPerIteration(world, Math.max(0, ITERATIONS - 100), ITERATIONS).toFixed(1),
          msPerIteration(world, Math.max(0, ITERATIONS - 100), ITERATIONS).toFixed(1),
          floor.toFixed(1),
          ((Date.now() - started) / 1000).toFixed(0),
        ],
      ],
    );
  } finally {
    await world.close();
  }
}

interface PayloadCase {
  name: string;
  iterations: number;
  responder: Responder;
  agent: string;
}

async function payloadCase(scenario: PayloadCase, storage: PayloadStorageSettings, label: string): Promise<string[]> {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-bench-images-'));
  const file = join(folder, 'photo.png');
  writeFileSync(file, randomBytes(1024 * KB));
  const photo = defineTool({
    name: 'photo',
    description: 'A 1 MiB photo.',
    parameters: z.object({}),
    execute: () => imageFile(file),
  });
  const world = await startBenchWorld(scenario.responder, {
    keepBodies: false,
    config: { payloadStorage: storage },
    tools: [...exampleTools, photo],
    agents: [
      { name: 'assistant', instructions: 'Repeat.', tools: ['repeat'] },
      {
        name: 'photographer',
        instructions: 'Photograph.',
        tools: ['photo'],
        limits: { max_image_bytes: 2 * 1024 * KB },
      },
    ],
  });
  try {
    const run = await world.client.start({ agent: scenario.agent, input: 'go' });
    const outcome = await run.result().then(
      (result) => result.status,
      (error: Error & { type?: string }) => `failed: ${error.type ?? error.name}`,
    );
    const runs = await chain(world, run.workflowId);
    const bytes = runs.reduce((total, entry) => total + entry.bytes, 0);
    return [
      scenario.name,
      label,
      outcome,
      String(runs.length - 1),
      String(bytes),
      (bytes / scenario.iterations).toFixed(0),
    ];
  } finally {
    await world.close();
  }
}

async function payloads(): Promise<string> {
  const results = Math.max(2, Math.round(160 * SCALE));
  const images = Math.max(2, Math.round(10 * SCALE));
  const imageResponder: Responder = (body) =>
    imagesSeen(body) >= images
      ? reply('seen')
      : callTools([{ id: `photo_${imagesSeen(body)}`, name: 'photo', arguments: '{}' }]);
  const scenarios: PayloadCase[] = [
    {
      name: `${results} x 128 KB results`,
      iterations: results,
      responder: repeater(results, 128 * KB),
      agent: 'assistant',
    },
    { name: `${images} x 1 MiB images`, iterations: images, responder: imageResponder, agent: 'photographer' },
  ];
  const directory = mkdtempSync(join(tmpdir(), 'patchloop-bench-payloads-'));
  const rows: string[][] = [];
  for (const scenario of scenarios) {
    rows.push(
      await payloadCase(scenario, { kind: 'local', directory, thresholdBytes: 256 * KB }, 'by reference, 256 KiB'),
    );
    rows.push(
      await payloadCase(scenario, { kind: 'local', directory, thresholdBytes: 64 * KB }, 'by reference, 64 KiB'),
    );
    rows.push(await payloadCase(scenario, { kind: 'off' }, 'inline'));
  }
  return table(
    ['scenario', 'payloads', 'outcome', 'continued as new', 'history bytes (chain)', 'bytes/iteration'],
    rows,
  );
}

async function session(): Promise<string> {
  const message = (turn: number) => `turn ${turn}: ${'z'.repeat(4 * KB - 16)}`;
  const world = await startBenchWorld(() => reply('ok') as FakeStep, { keepBodies: false });
  const overhead: number[] = [];
  let mismatches = 0;
  try {
    const handle = await world.client.startSession({ agent: 'assistant' });
    // What every request must hold: the conversation so far, in order.
    const expected: Array<Record<string, unknown>> = [];
    const checkLast = () => {
      const body = world.fake.lastBody;
      if (!body) return;
      if (JSON.stringify(body.messages.slice(1)) !== JSON.stringify(expected)) mismatches += 1;
    };
    for (let turn = 1; turn <= TURNS; turn += 1) {
      const before = world.fake.requests.length;
      const started = performance.now();
      expected.push({ role: 'user', content: message(turn) });
      await handle.send(message(turn));
      const wall = performance.now() - started;
      const model = world.fake.requests
        .slice(before)
        .reduce((sum, request) => sum + ((request.completedAt ?? request.receivedAt) - request.receivedAt), 0);
      overhead.push(wall - model);
      checkLast();
      expected.push({ role: 'assistant', content: 'ok' });
      if (turn % 200 === 0) process.stderr.write(`session: turn ${turn}/${TURNS}\n`);
    }
    const status = await handle.status(Number.MAX_SAFE_INTEGER);
    const continued = Number(status['continued_as_new' as keyof typeof status] ?? 0);
    const contextMb = JSON.stringify(await handle.transcript()).length / 2 ** 20;
    const at = (turn: number) => median(overhead.slice(Math.max(0, turn - 10), turn)).toFixed(1);
    return table(
      [
        'turns',
        'context MB',
        'continued as new',
        'requests not matching the conversation',
        'overhead ms @10',
        `overhead ms @${TURNS}`,
      ],
      [[String(TURNS), contextMb.toFixed(1), String(continued), String(mismatches), at(10), at(TURNS)]],
    );
  } finally {
    await world.close();
  }
}

const WINDOW = 32_000;

/** Reads 4 KB per iteration until `iterations` calls were made; summary calls get a seven-field summary. */
function windowedReader(iterations: number, tally: { summaries: number; summaryTokens: number }): Responder {
  return (body) => {
    if (isSummaryCall(body)) {
      tally.summaries += 1;
      tally.summaryTokens += promptTokens(JSON.stringify(body).length);
      return reply(sevenFieldSummary(0));
    }
    // The newest call always stays verbatim: the next number follows from it, whatever was compacted.
    let done = 0;
    for (let index = body.messages.length - 1; index >= 0; index -= 1) {
      const calls = body.messages[index]!['tool_calls'] as Array<{ id: string }> | undefined;
      if (calls?.length) {
        done = Number(calls[0]!.id.slice('call_'.length)) + 1;
        break;
      }
    }
    if (done >= iterations) return reply('done');
    const args = JSON.stringify({ text: 'abcdefghijklmnop', times: (4 * KB) / 16 });
    return callTools([{ id: `call_${done}`, name: 'repeat', arguments: args }]);
  };
}

async function windowedRun(): Promise<string> {
  const tally = { summaries: 0, summaryTokens: 0 };
  const world = await startBenchWorld(windowedReader(ITERATIONS, tally), {
    keepBodies: false,
    windowTokens: WINDOW,
    agents: [{ name: 'reader', instructions: 'Repeat.', tools: ['repeat'], context: { window_tokens: WINDOW } }],
  });
  try {
    const started = Date.now();
    const run = await world.client.start(
      { agent: 'reader', input: 'repeat forever' },
      { workflowId: `windowed-${started}` },
    );
    const progress = setInterval(
      () => process.stderr.write(`windowed run: ${world.fake.requests.length} calls\n`),
      30_000,
    );
    const result = await run.result().finally(() => clearInterval(progress));
    const status = await run.status(Number.MAX_SAFE_INTEGER);
    const agentRequests = world.fake.requests.length - tally.summaries;
    const at100 = medianMsPerIteration(world, 50, 150);
    const atEnd = medianMsPerIteration(
      world,
      Math.max(0, world.fake.requests.length - 100),
      world.fake.requests.length,
    );
    const largest = Math.max(...world.fake.requests.map((request) => request.promptTokens));
    return table(
      [
        'iterations',
        'completed',
        'requests over the window',
        'largest request tokens',
        'compactions',
        'summary calls',
        'summary tokens / all tokens',
        'ms/iter @100 (median)',
        `ms/iter @${ITERATIONS} (median)`,
        'ratio',
        'total s',
      ],
      [
        [
          String(agentRequests - 1),
          String(result.status === 'completed'),
          String(world.fake.requests.filter((request) => request.overWindow).length),
          `${largest} of ${WINDOW}`,
          String(status.context.compactions),
          String(tally.summaries),
          `${((100 * tally.summaryTokens) / (result.usage?.total_tokens ?? 1)).toFixed(1)}%`,
          at100.toFixed(1),
          atEnd.toFixed(1),
          `${(atEnd / at100).toFixed(2)}x`,
          ((Date.now() - started) / 1000).toFixed(0),
        ],
      ],
    );
  } finally {
    await world.close();
  }
}

async function main() {
  const sections: Array<[string, () => Promise<string>]> = [
    ['long run', longRun],
    ['windowed run', windowedRun],
    ['large payloads', payloads],
    ['long session', session],
  ];
  const only = process.env['BENCH_ONLY'];
  for (const [name, section] of sections) {
    if (only && !name.includes(only)) continue;
    process.stderr.write(`== ${name} ==\n`);
    console.log(`\n${name} (scale ${SCALE})\n${await section()}`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
