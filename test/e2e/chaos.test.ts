import { expect, it } from 'vitest';
import { runChaos } from '../chaos/chaos';

/**
 * The short, seeded version of `npm run chaos`: its own dev server (restarted once), two worker
 * processes killed and restarted, provider faults of every kind, user messages and aborts.
 */
it(
  'under chaos every run settles with a valid transcript, nothing lost, nothing duplicated, no finished call repeated',
  { timeout: 600_000 },
  async () => {
    const report = await runChaos({ runs: 8, seed: 7, concurrency: 4 });
    console.log(report.table);
    expect(report.serverRestarts).toBe(1);
    expect([report.workerKills, report.workerTerms]).toEqual([2, 1]);
    expect(Object.values(report.providerFaults).reduce((total, count) => total + count, 0)).toBeGreaterThan(5);
    const problems = report.runs.flatMap((run) => run.problems.map((problem) => `run ${run.index}: ${problem}`));
    expect(problems).toEqual([]);
    expect(report.runs.map((run) => [run.settled, run.valid, run.lost, run.duplicated, run.stuck])).toEqual(
      report.runs.map(() => [true, true, 0, 0, false]),
    );
    expect(report.runs.every((run) => run.status === 'completed' || run.status === 'aborted')).toBe(true);
    // Side effects counted outside the workers: some happened, and no finished call ran twice.
    expect(report.sideEffects.calls).toBeGreaterThan(0);
    expect(report.sideEffects.finished).toBe(0);
  },
);
