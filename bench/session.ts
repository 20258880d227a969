/**
 * `npm run bench:session`: a 1,000-turn chatSession against the fake model. Prints history bytes per
 * turn, continue-as-new count, worker memory, and p50/p95 turn latency overhead (wall time minus the
 * fake model's own time) around turns 10, 100 and 1,000.
 */
import type { Responder } from '../src/fake-model/server';
import { percentile, table } from './report';
import { startBenchWorld } from './world';

const TURNS = Number(process.env['BENCH_TURNS'] ?? 1000);
const MARKS = [10, 100, 1000].filter((mark) => mark <= TURNS);
const WINDOW = 10;
const MESSAGE = 'Please keep this in mind: '.padEnd(200, 'x');

const reply: Responder = (body) => {
  const last = body.messages.at(-1);
  return { kind: 'reply', content: `noted (${String(last?.['content'] ?? '').length} chars)` };
};

interface TurnSample {
  turn: number;
  wallMs: number;
  modelMs: number;
  historyBytes: number;
  runId: string;
  rssMb: number;
  heapMb: number;
}

async function main() {
  const world = await startBenchWorld(reply, { keepBodies: false });
  const samples: TurnSample[] = [];
  let continued = 0;
  try {
    const session = await world.client.startSession({ agent: 'assistant' });
    for (let turn = 1; turn <= TURNS; turn += 1) {
      const requestsBefore = world.fake.requests.length;
      const started = performance.now();
      await session.send(`${MESSAGE} #${turn}`);
      const wallMs = performance.now() - started;
      const modelMs = world.fake.requests
        .slice(requestsBefore)
        .reduce((sum, request) => sum + ((request.completedAt ?? request.receivedAt) - request.receivedAt), 0);
      const status = await session.status(Number.MAX_SAFE_INTEGER);
      continued = Number(status['continued_as_new' as keyof typeof status] ?? 0);
      const description = await session.workflow.describe();
      if (MARKS.some((mark) => turn > mark - WINDOW - 1 && turn <= mark)) (globalThis as { gc?: () => void }).gc?.();
      const memory = process.memoryUsage();
      samples.push({
        turn,
        wallMs,
        modelMs,
        historyBytes: status.history.bytes,
        runId: description.runId,
        rssMb: memory.rss / 2 ** 20,
        heapMb: memory.heapUsed / 2 ** 20,
      });
      if (turn % 100 === 0) process.stderr.write(`turn ${turn}/${TURNS}\n`);
    }
    const transcript = await session.transcript();
    if (transcript.length !== 1 + 2 * TURNS)
      throw new Error(`context lost: ${transcript.length} messages after ${TURNS} turns`);
  } finally {
    await world.close();
  }

  const rows = MARKS.map((mark) => {
    const window = samples.filter((sample) => sample.turn > mark - WINDOW && sample.turn <= mark);
    const overhead = window.map((sample) => sample.wallMs - sample.modelMs);
    // Bytes a turn adds to its run's history (turns right after a continue-as-new start a new run).
    const deltas = window.flatMap((sample) => {
      const previous = samples.find((other) => other.turn === sample.turn - 1);
      return previous && previous.runId === sample.runId ? [sample.historyBytes - previous.historyBytes] : [];
    });
    const last = window.at(-1)!;
    return [
      String(mark),
      deltas.length > 0 ? percentile(deltas, 0.5).toFixed(0) : 'n/a',
      percentile(overhead, 0.5).toFixed(1),
      percentile(overhead, 0.95).toFixed(1),
      percentile(
        window.map((sample) => sample.modelMs),
        0.5,
      ).toFixed(1),
      last.rssMb.toFixed(0),
      last.heapMb.toFixed(0),
    ];
  });
  console.log(
    `chatSession, ${TURNS} turns of ${MESSAGE.length}-character messages, full context kept (no compaction); windows of ${WINDOW} turns ending at each mark.\n`,
  );
  console.log(
    table(
      ['turn', 'history bytes/turn', 'overhead p50 ms', 'overhead p95 ms', 'model p50 ms', 'worker rss MB', 'heap MB'],
      rows,
    ),
  );
  console.log(`\ncontinue-as-new: ${continued} times in ${TURNS} turns`);
  console.log(
    "overhead = wall time of a `send` minus the fake model's own time; the worker runs in this process (rss and heap include the client).",
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
