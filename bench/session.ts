/**
 * `npm run bench:session`: a 1,000-turn chatSession against the fake model. Prints history bytes per
 * turn, continue-as-new count, worker memory, and p50/p95 turn latency overhead (wall time minus the
 * fake model's own time) around turns 10, 100 and 1,000. The last turns of the long session are
 * interleaved with the first turns of new sessions, so the ratio of old to young turns is measured side
 * by side (a shared machine's slow minute slows both) rather than minutes apart.
 */
import type { SessionHandle } from '../src/client/patchloop-client';
import type { Responder } from '../src/fake-model/server';
import { percentile, table } from './report';
import { startBenchWorld } from './world';

const TURNS = Number(process.env['BENCH_TURNS'] ?? 1000);
const MARKS = [10, 100, 1000].filter((mark) => mark <= TURNS);
const WINDOW = 10;
/** The long session's last turns, each followed by a turn of a new session (WINDOW turns each). */
const SIDE_BY_SIDE = Math.min(2 * WINDOW, TURNS);
const MESSAGE = 'Please keep this in mind: '.padEnd(200, 'x');

const reply: Responder = (body) => {
  const last = body.messages.at(-1);
  return { kind: 'reply', content: `noted (${String(last?.['content'] ?? '').length} chars)` };
};

interface TurnSample {
  turn: number;
  /** 'long' for the 1,000-turn session; 'young' for the new sessions its last turns alternate with. */
  session: 'long' | 'young';
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
    const young: SessionHandle[] = [];
    const turnOn = async (handle: SessionHandle, turn: number, kind: TurnSample['session']) => {
      const requestsBefore = world.fake.requests.length;
      const started = performance.now();
      await handle.send(`${MESSAGE} #${turn}`);
      const wallMs = performance.now() - started;
      const modelMs = world.fake.requests
        .slice(requestsBefore)
        .reduce((sum, request) => sum + ((request.completedAt ?? request.receivedAt) - request.receivedAt), 0);
      const status = await handle.status(Number.MAX_SAFE_INTEGER);
      if (kind === 'long') continued = Number(status['continued_as_new' as keyof typeof status] ?? 0);
      const description = await handle.workflow.describe();
      // A full collection between measured turns (outside their timing), for both sides alike.
      const measured =
        kind === 'young' ||
        turn > TURNS - SIDE_BY_SIDE - 1 ||
        MARKS.some((mark) => turn > mark - WINDOW - 1 && turn <= mark);
      if (measured) (globalThis as { gc?: () => void }).gc?.();
      const memory = process.memoryUsage();
      samples.push({
        turn,
        session: kind,
        wallMs,
        modelMs,
        historyBytes: status.history.bytes,
        runId: description.runId,
        rssMb: memory.rss / 2 ** 20,
        heapMb: memory.heapUsed / 2 ** 20,
      });
    };
    for (let turn = 1; turn <= TURNS; turn += 1) {
      await turnOn(session, turn, 'long');
      const sideBySide = turn - (TURNS - SIDE_BY_SIDE);
      if (sideBySide > 0) {
        // A new session every WINDOW turns: its turns 1 to WINDOW run between the long session's.
        if ((sideBySide - 1) % WINDOW === 0) young.push(await world.client.startSession({ agent: 'assistant' }));
        await turnOn(young.at(-1)!, ((sideBySide - 1) % WINDOW) + 1, 'young');
      }
      if (turn % 100 === 0) process.stderr.write(`turn ${turn}/${TURNS}\n`);
    }
    const transcript = await session.transcript();
    if (transcript.length !== 1 + 2 * TURNS)
      throw new Error(`context lost: ${transcript.length} messages after ${TURNS} turns`);
    for (const handle of young) {
      const messages = await handle.transcript();
      if (messages.length !== 1 + 2 * WINDOW)
        throw new Error(`context lost: ${messages.length} messages in a new session after ${WINDOW} turns`);
    }
  } finally {
    await world.close();
  }

  const long = samples.filter((sample) => sample.session === 'long');
  const rows = MARKS.map((mark) => {
    const window = long.filter((sample) => sample.turn > mark - WINDOW && sample.turn <= mark);
    const overhead = window.map((sample) => sample.wallMs - sample.modelMs);
    // Bytes a turn adds to its run's history (turns right after a continue-as-new start a new run).
    const deltas = window.flatMap((sample) => {
      const previous = long.find((other) => other.turn === sample.turn - 1);
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
  const overhead = (sample: TurnSample) => sample.wallMs - sample.modelMs;
  const old = long.slice(-SIDE_BY_SIDE).map(overhead);
  const fresh = samples.filter((sample) => sample.session === 'young').map(overhead);
  const oldP50 = percentile(old, 0.5);
  const freshP50 = percentile(fresh, 0.5);
  console.log(
    `\nside by side, alternating: turns ${TURNS - SIDE_BY_SIDE + 1}-${TURNS} overhead p50 ${oldP50.toFixed(1)} ms (p95 ${percentile(old, 0.95).toFixed(1)}); ` +
      `turns 1-${WINDOW} of ${SIDE_BY_SIDE / WINDOW} new sessions p50 ${freshP50.toFixed(1)} ms (p95 ${percentile(fresh, 0.95).toFixed(1)}); ` +
      `old / new: ${(oldP50 / freshP50).toFixed(2)}x`,
  );
  console.log(`continue-as-new: ${continued} times in ${TURNS} turns`);
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
