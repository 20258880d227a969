/**
 * `npm run bench:history`: history bytes per ReAct iteration of the example agent, for patchloop's
 * digest-and-query transport and for a naive transport that passes the whole compiled request as the
 * LLM activity's input. Each iteration's tool output is 4 KB. Both run here, side by side.
 */
import { temporal } from '@temporalio/proto';
import type { PatchloopClient, RunHandle } from '../src/client/patchloop-client';
import type { Responder } from '../src/fake-model/server';
import { table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = [5, 20, 60];
const PIECE = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_';
const TIMES = 64; // 64 x 64 characters = 4,096 characters of tool output per iteration

/** Calls `repeat` until the run has `target` tool results, then answers. */
function scriptedModel(target: (body: { messages: Array<Record<string, unknown>> }) => number): Responder {
  return (body, index) => {
    const done = body.messages.filter((message) => message['role'] === 'tool').length;
    if (done >= target(body)) return { kind: 'reply', content: 'finished' };
    return {
      kind: 'reply',
      toolCalls: [{ id: `call_${index}`, name: 'repeat', arguments: JSON.stringify({ text: PIECE, times: TIMES }) }],
    };
  };
}

/** Bytes per event type, from the run's own history (protobuf-encoded events). */
async function bytesByEventType(
  run: RunHandle,
  client: PatchloopClient,
): Promise<Map<string, { count: number; bytes: number }>> {
  const totals = new Map<string, { count: number; bytes: number }>();
  for await (const event of historyEvents(run, client)) {
    const name = temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? 'unknown';
    const entry = totals.get(name) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    totals.set(name, entry);
  }
  return totals;
}

/** Pages through the history in small pages: a naive run's pages exceed gRPC's 4 MB limit otherwise. */
async function* historyEvents(
  run: RunHandle,
  client: PatchloopClient,
): AsyncGenerator<temporal.api.history.v1.IHistoryEvent> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: client.temporal.options.namespace,
      execution: { workflowId: run.workflowId },
      maximumPageSize: 20,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    yield* page.history?.events ?? [];
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

async function main() {
  // The wanted iteration count travels in the user input, so one worker serves every run.
  const world = await startBenchWorld(
    scriptedModel((body) =>
      Number(/iterations=(\d+)/.exec(String(body.messages.find((m) => m['role'] === 'user')?.['content']))?.[1]),
    ),
  );
  const rows: string[][] = [];
  let breakdown = new Map<string, { count: number; bytes: number }>();
  const perIteration = new Map<string, number[]>();
  try {
    for (const transport of ['query', 'inline'] as const) {
      for (const iterations of ITERATIONS) {
        const run = await world.client.start({
          agent: 'assistant',
          input: `please work, iterations=${iterations}`,
          request_transport: transport,
        });
        const result = await run.result();
        const { bytes, events } = await run.historySize();
        const toolMessages = result.transcript.filter((message) => message['role'] === 'tool');
        if (toolMessages.length !== iterations)
          throw new Error(`expected ${iterations} tool results, got ${toolMessages.length}`);
        const newContent =
          result.transcript.slice(2).reduce((sum, message) => sum + JSON.stringify(message).length, 0) / iterations;
        const perIter = bytes / iterations;
        perIteration.set(transport, [...(perIteration.get(transport) ?? []), bytes]);
        const events_ = await bytesByEventType(run, world.client);
        if (transport === 'query' && iterations === ITERATIONS.at(-1)) breakdown = events_;
        // The result carries the final transcript once; the loop itself should cost new content + a little.
        const resultBytes = events_.get('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED')?.bytes ?? 0;
        const loopPerIter = (bytes - resultBytes) / iterations;
        rows.push([
          transport === 'query' ? 'patchloop' : 'naive (inline)',
          String(iterations),
          String(events),
          String(bytes),
          perIter.toFixed(0),
          String(resultBytes),
          loopPerIter.toFixed(0),
          newContent.toFixed(0),
          (loopPerIter - newContent).toFixed(0),
        ]);
      }
    }
  } finally {
    await world.close();
  }
  console.log(
    'History of one agentRun (4 KB of tool output per iteration), from Temporal describe(): both transports measured in this run.\n',
  );
  console.log(
    table(
      [
        'transport',
        'iterations',
        'events',
        'history bytes',
        'bytes/iter',
        'result bytes',
        'loop bytes/iter',
        'new content/iter',
        'loop overhead/iter',
      ],
      rows,
    ),
  );
  console.log(
    '(result bytes: the final result event, which carries the whole transcript once; loop = everything else)',
  );
  console.log('\nMarginal bytes per added iteration (flat means O(new content)):\n');
  const marginal = (values: number[], from: number, to: number) =>
    ((values[to]! - values[from]!) / (ITERATIONS[to]! - ITERATIONS[from]!)).toFixed(0);
  console.log(
    table(
      ['transport', '5 -> 20', '20 -> 60'],
      [...perIteration.entries()].map(([transport, values]) => [
        transport === 'query' ? 'patchloop' : 'naive (inline)',
        marginal(values, 0, 1),
        marginal(values, 1, 2),
      ]),
    ),
  );
  console.log(`\nWhere patchloop's bytes go at ${ITERATIONS.at(-1)} iterations (per iteration):\n`);
  const last = ITERATIONS.at(-1)!;
  console.log(
    table(
      ['event type', 'events', 'bytes', 'bytes/iteration'],
      [...breakdown.entries()]
        .sort((a, b) => b[1].bytes - a[1].bytes)
        .map(([name, { count, bytes }]) => [
          name.replace('EVENT_TYPE_', ''),
          String(count),
          String(bytes),
          (bytes / last).toFixed(0),
        ]),
    ),
  );
  const ours = perIteration.get('query')!;
  const naive = perIteration.get('inline')!;
  console.log(
    `\nat 60 iterations: naive history is ${(naive[2]! / ours[2]!).toFixed(1)}x patchloop's (${naive[2]} vs ${ours[2]} bytes)`,
  );
  console.log('target: patchloop loop bytes/iteration flat and at most new content + 3 KB');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
