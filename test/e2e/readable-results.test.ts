import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { temporal } from '@temporalio/proto';
import { QueryNotRegisteredError } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { validateToolLinkage, type Message } from '../../src/context';
import { reply } from '../../src/fake-model/steps';
import type { RunHandle } from '../../src/client/patchloop-client';
import { NO_BOUNDS, type AgentRunResult } from '../../src/runtime';
import { transcriptPageQuery } from '../../src/common';
import { pageReader } from '../../support/context-model';
import { pageText, tools } from '../support/context-tools';
import { startMoto, type MotoS3 } from '../support/moto';
import { repositoryRoot, testVenv } from '../../support/repository';
import { temporalAddress, type TestWorld } from '../support/temporal';

/**
 * A run's small fields are readable by any client without patchloop's data converter, however long
 * the run: its result stays under the payload store's threshold, and a transcript too large for it is
 * read by the paged `transcriptPage` query (or, by a client configured with the same S3 store, by
 * the `transcript` query, whose answer then travels by reference).
 */
let moto: MotoS3 | undefined;
beforeAll(async () => {
  moto = await startMoto('patchloop-results');
});
afterAll(() => moto?.stop());

const TASK = 'Read the report, one page per call, and tell me how many pages you read.';
const reader = { name: 'reader', instructions: 'You read reports.', tools: ['read_page'] };
/** The agent's instructions, the user's task, 80 × (assistant tool call + its 4 KB result), the answer. */
const MESSAGES = 1 + 1 + 80 * 2 + 1;

interface PythonRead {
  result: Record<string, unknown>;
  transcript: Message[];
  pages: number;
}

/** test/any-language/python_long_result.py with Temporal's Python SDK: what another service reads. */
function pythonRead(workflowId: string, s3?: MotoS3): Promise<PythonRead> {
  const script = join(repositoryRoot, 'test', 'any-language', 'python_long_result.py');
  const args = [script, temporalAddress(), workflowId, ...(s3 ? [s3.endpoint, s3.bucket] : [])];
  return new Promise((resolve, reject) =>
    execFile(
      join(testVenv, 'bin', 'python'),
      args,
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env } },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    ),
  );
}

/** The result payload exactly as history holds it: its encoding, its size and its JSON. */
async function recordedResult(
  run: RunHandle,
): Promise<{ encoding: string; bytes: number; value: AgentRunResult & Record<string, unknown> }> {
  const history = await run.workflow.fetchHistory();
  const closed = history.events!.at(-1)!;
  const payload = closed.workflowExecutionCompletedEventAttributes!.result!.payloads![0]!;
  const encoding = Buffer.from(payload.metadata!['encoding']!).toString();
  const data = Buffer.from(payload.data!);
  return {
    encoding,
    bytes: data.length,
    value: JSON.parse(data.toString()) as AgentRunResult & Record<string, unknown>,
  };
}

function readerWorld(
  startWorld: StartWorld,
  payloadStorage?: TestWorld['config']['payloadStorage'],
): Promise<TestWorld> {
  return startWorld({
    fake: { responder: pageReader(80, 4) },
    agents: [reader],
    tools,
    ...(payloadStorage ? { config: { payloadStorage } } : {}),
  });
}

/** The tool result the run recorded for page `page` (a string result is kept as its JSON). */
function toolResult(transcript: Message[], page: number): unknown {
  return transcript.find((message) => message['tool_call_id'] === `call_page_${page}`)?.['content'];
}

describe('results every client can read', () => {
  it('a plain Python client reads an 80-iteration run: status, answer and usage from the result, the transcript by pages', async ({
    startWorld,
  }) => {
    const world = await readerWorld(startWorld);
    expect(world.config.payloadStorage.kind).toBe('local');
    const run = await world.client.start({ agent: 'reader', input: TASK, budget: NO_BOUNDS });
    const read = await pythonRead(run.workflowId);

    // What history holds is plain JSON under the threshold: no reference that needs patchloop's store.
    const recorded = await recordedResult(run);
    expect(recorded.encoding).toBe('json/plain');
    expect(recorded.bytes).toBeLessThan(256 * 1024);
    expect(recorded.value).toMatchObject({ transcript: [], transcript_omitted: true, transcript_length: MESSAGES });

    // The TypeScript client still gives the whole transcript, transparently.
    const result = await run.result();
    expect(result.transcript).toHaveLength(MESSAGES);
    expect(result.transcript_omitted).toBeUndefined();
    validateToolLinkage(result.transcript);
    expect(result.usage?.total_tokens).toBeGreaterThan(0);

    expect(read.result).toEqual({
      status: 'completed',
      answer: 'I read all 80 pages.',
      usage: result.usage,
      transcript: [],
      transcript_omitted: true,
      transcript_length: MESSAGES,
      transcript_query: 'transcriptPage',
    });
    expect(read.pages).toBeGreaterThan(1);
    expect(read.transcript).toHaveLength(MESSAGES);
    expect(toolResult(read.transcript, 37)).toBe(JSON.stringify(pageText(37, 4)));
    expect(read.transcript.at(-1)).toMatchObject({ role: 'assistant', content: 'I read all 80 pages.' });
    expect(read.transcript).toEqual(result.transcript);
    expect(await run.transcript()).toEqual(result.transcript);
    // A page past the end (the transcript shrank since) is an empty page that says to read again from 0.
    const past = await run.workflow.query(transcriptPageQuery, { offset: 10 ** 9 });
    expect(past).toMatchObject({ text: '', next_offset: 0, done: false });
    // How the client tells a worker without pages (fall back to the whole transcript) from a handler
    // that threw: the workflow's own words, which the SDK passes on.
    const unknown = await run.workflow.query('noSuchQuery').catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(QueryNotRegisteredError);
    expect((unknown as Error).message).toMatch(/did not register a handler/);
  });

  it('Python configured with the same S3 store reads the whole transcript, which travels by reference', async ({
    startWorld,
  }) => {
    const s3 = moto!;
    const world = await readerWorld(startWorld, {
      kind: 's3',
      bucket: s3.bucket,
      prefix: 'results/',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      thresholdBytes: 256 * 1024,
    });
    const run = await world.client.start({ agent: 'reader', input: TASK, budget: NO_BOUNDS });
    const read = await pythonRead(run.workflowId, s3);
    const result = await run.result();
    expect((await recordedResult(run)).encoding).toBe('json/plain');
    expect(read.result).toMatchObject({ status: 'completed', answer: 'I read all 80 pages.', usage: result.usage });
    expect(read.transcript).toHaveLength(MESSAGES);
    expect(toolResult(read.transcript, 80)).toBe(JSON.stringify(pageText(80, 4)));
    expect(read.transcript).toEqual(result.transcript);

    // The `transcript` answer went by reference: the bucket holds it as one payload.
    const listed = await s3.s3.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'results/' }));
    const stored = await Promise.all(
      (listed.Contents ?? []).map(async (object) => {
        const got = await s3.s3.send(new GetObjectCommand({ Bucket: s3.bucket, Key: object.Key! }));
        const payload = temporal.api.common.v1.Payload.decode(await got.Body!.transformToByteArray());
        return Buffer.from(payload.data).toString();
      }),
    );
    expect(stored).toContain(JSON.stringify(result.transcript));
  });

  it('an answer too large for the result is left out of it and read as the last message', async ({ startWorld }) => {
    const answer = 'a long answer. '.repeat(24_000);
    const world = await startWorld({ fake: { script: [reply(answer)] } });
    const run = await world.client.start({ agent: 'assistant', input: 'write a lot' });
    const result = await run.result();
    const recorded = await recordedResult(run);
    expect(recorded.encoding).toBe('json/plain');
    expect(recorded.value).toMatchObject({
      status: 'completed',
      answer: null,
      answer_omitted: true,
      transcript: [],
      transcript_omitted: true,
      transcript_length: 3,
    });
    expect(result.answer).toBe(answer);
    expect(result.answer_omitted).toBeUndefined();
    expect(result.transcript.at(-1)).toMatchObject({ role: 'assistant', content: answer });
    const read = await pythonRead(run.workflowId);
    expect(read.transcript.at(-1)!['content']).toBe(answer);
  });

  it("a long session's result leaves its transcript out too; the client fills it in, Python reads it by pages", async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { script: [reply('first read'), reply('second read')] } });
    const session = await world.client.startSession({ agent: 'assistant' });
    const message = (n: number) => `${n}: ${'m'.repeat(200 * 1024)}`;
    await session.send(message(1));
    await session.send(message(2));
    await session.close();
    const result = await session.sessionResult();
    expect(result.turns).toBe(2);
    expect(result.transcript.map((m) => m['content'])).toEqual([
      expect.any(String),
      message(1),
      'first read',
      message(2),
      'second read',
    ]);
    const recorded = await recordedResult(session);
    expect(recorded.encoding).toBe('json/plain');
    expect(recorded.value).toMatchObject({ turns: 2, transcript: [], transcript_omitted: true, transcript_length: 5 });
    const read = await pythonRead(session.workflowId);
    expect(read.result).toMatchObject({ turns: 2, transcript_length: 5, transcript_query: 'transcriptPage' });
    expect(read.transcript).toEqual(result.transcript);
  });
});
