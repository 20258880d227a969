import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { validateToolLinkage, type Message } from '../../src/context';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import { clientOn, listedWorkflows, temporalAddress } from '../support/temporal';
import { callsFinished, eventOf, recordHistory, replyReceived, startedChild } from '../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';
import { scriptsByAgent } from '../../support/agent-scripts';

const agents = [
  {
    name: 'assistant',
    instructions: 'You add and wait.',
    tools: ['add', 'wait'],
    limits: { heartbeat_timeout_seconds: 2 },
  },
];

const workers: WorkerProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function setup(fake: FakeModelServer) {
  const taskQueue = `crash-${randomUUID()}`;
  const client = await clientOn(taskQueue);
  cleanups.push(
    () => client.close(),
    () => fake.close(),
  );
  const startWorker = async () => {
    const worker = await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents });
    workers.push(worker);
    return worker;
  };
  return { client, startWorker };
}

function expectNoDuplicates(transcript: Message[]): void {
  validateToolLinkage(transcript);
  const keys = transcript.map((message) => JSON.stringify(message));
  expect(new Set(keys).size).toBe(keys.length);
}

describe('crash survival (kill -9 of the worker process)', () => {
  it('during an LLM phase: a new worker retries the phase, the partial stream never reaches the transcript', async () => {
    const fake = await FakeModelServer.start({
      script: [{ kind: 'hang', chunks: ['partial '] }, reply('recovered answer')],
    });
    const { client, startWorker } = await setup(fake);
    const first = await startWorker();
    const run = await client.start({ agent: 'assistant', input: 'hello' });
    await fake.waitForRequests(1);
    await replyReceived(run, 'partial '.length);
    await first.kill('SIGKILL');
    await startWorker();
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'recovered answer' },
    ]);
    expectNoDuplicates(result.transcript);
    expect(fake.requests).toHaveLength(2);
    fake.assertDone();
    await recordHistory(run, 'crash-during-llm');
  });

  it('during a tool batch: the batch runs again on a new worker, each call is answered exactly once', async () => {
    const fake = await FakeModelServer.start({
      script: [
        callTools([
          { id: 'call_add', name: 'add', arguments: '{"a": 2, "b": 2}' },
          { id: 'call_wait', name: 'wait', arguments: '{"seconds": 3}' },
        ]),
        reply('all done'),
      ],
    });
    const { client, startWorker } = await setup(fake);
    const first = await startWorker();
    const run = await client.start({ agent: 'assistant', input: 'add and wait' });
    await eventOf(run, 'tool_call_start');
    await callsFinished(run, 1);
    await first.kill('SIGKILL');
    await startWorker();
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.transcript.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_add', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 2}' } },
          { id: 'call_wait', type: 'function', function: { name: 'wait', arguments: '{"seconds": 3}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_add', content: '4' },
      { role: 'tool', tool_call_id: 'call_wait', content: '"waited 3 s"' },
      { role: 'assistant', content: 'all done' },
    ]);
    expectNoDuplicates(result.transcript);
    fake.assertDone();
    await recordHistory(run, 'crash-during-batch');
  });

  it('SIGTERM shuts a worker down gracefully: the phase in flight is retried, not recorded half-done', async () => {
    const fake = await FakeModelServer.start({
      script: [{ kind: 'hang', chunks: ['half '] }, reply('complete answer')],
    });
    const { client, startWorker } = await setup(fake);
    const first = await startWorker();
    const run = await client.start({ agent: 'assistant', input: 'hello' });
    await fake.waitForRequests(1);
    await replyReceived(run, 'half '.length);
    await first.kill('SIGTERM');
    expect(first.output()).toContain('worker stopped');
    await startWorker();
    const result = await run.result();
    expect(result.answer).toBe('complete answer');
    expect(result.transcript.slice(1)).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'complete answer' },
    ]);
    fake.assertDone();
  });
});

describe('crash survival with sub-agents', () => {
  it('kill -9 while a child run works: both runs resume, the child is not started again, no model request repeats', async () => {
    const scripts = scriptsByAgent({
      lead: {
        instructions: 'You delegate.',
        steps: [
          callTools([{ id: 'd1', name: 'worker_agent', arguments: '{"input": "wait 3 s, then add 2 and 2"}' }]),
          reply('the worker says 4'),
        ],
      },
      worker_agent: {
        instructions: 'You add and wait.',
        steps: [
          callTools([
            { id: 'w1', name: 'wait', arguments: '{"seconds": 3}' },
            { id: 'a1', name: 'add', arguments: '{"a": 2, "b": 2}' },
          ]),
          reply('4'),
        ],
      },
    });
    const fake = await FakeModelServer.start({ responder: scripts.responder });
    const taskQueue = `crash-${randomUUID()}`;
    const client = await clientOn(taskQueue);
    cleanups.push(
      () => client.close(),
      () => fake.close(),
    );
    const tree = [
      {
        name: 'lead',
        instructions: 'You delegate.',
        subagents: ['worker_agent'],
        limits: { heartbeat_timeout_seconds: 2 },
      },
      {
        name: 'worker_agent',
        instructions: 'You add and wait.',
        tools: ['add', 'wait'],
        limits: { heartbeat_timeout_seconds: 2 },
      },
    ];
    const startWorker = async () => {
      const worker = await spawnWorker({ address: temporalAddress(), taskQueue, modelUrl: fake.url, agents: tree });
      workers.push(worker);
      return worker;
    };
    const first = await startWorker();
    const run = await client.start({ agent: 'lead', input: 'get the worker to add' });
    const childId = await startedChild(run, 'd1');
    const child = client.run(childId);
    await eventOf(child, 'tool_call_start');
    await first.kill('SIGKILL');
    await startWorker();
    const result = await run.result();
    expect(result.answer).toBe('the worker says 4');
    expect(result.transcript.find((message) => message['tool_call_id'] === 'd1')).toEqual({
      role: 'tool',
      tool_call_id: 'd1',
      content: '"4"',
    });
    expectNoDuplicates(result.transcript);
    const childResult = await child.result();
    expect(childResult.status).toBe('completed');
    expectNoDuplicates(await child.transcript());
    // Each model request of either run was made once: the child was re-attached, not started again.
    expect(scripts.requests('lead')).toHaveLength(2);
    expect(scripts.requests('worker_agent')).toHaveLength(2);
    expect(fake.requests).toHaveLength(4);
    scripts.assertDone();
    const started = (await run.status()).events.filter((event) => event.event_type === 'subagent_started');
    expect(started).toHaveLength(1);
    expect(await listedWorkflows(`WorkflowId = '${childId}'`)).toHaveLength(1);
  });
});
