import { expect, inject, it } from 'vitest';
import { runChaos } from '../../support/chaos';

/**
 * The short, seeded version of `npm run chaos`: its own Temporal (restarted once; the dev server, or in
 * the cluster projects temporal-server on PostgreSQL), two worker
 * processes killed and restarted, each with its own stdio MCP server (Python), provider faults of every
 * kind, user messages and aborts. Two of the runs (1 and 5) call sub-agents, run 5 two at once.
 */
it(
  'under chaos every run settles with a valid transcript, nothing lost, nothing duplicated, no finished call repeated, no MCP call run twice; every sub-agent child started once, its finished work never done again',
  { timeout: 600_000 },
  async () => {
    const report = await runChaos({ runs: 8, seed: 7, concurrency: 4, temporal: inject('temporalKind') });
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
    // An MCP server's tools among them (the Python server over stdio, in every worker): calls of the
    // non-idempotent tool happened and none ran twice on the server; the read-only one was called too;
    // no server process outlived its worker.
    expect(report.mcp.pay).toBeGreaterThan(0);
    expect(report.mcp.executed).toBeGreaterThan(0);
    expect(report.mcp.quote).toBeGreaterThan(0);
    expect(report.mcp.duplicates).toBe(0);
    // A SIGKILL and a SIGTERM each wait for a call of it in flight (up to 15 s) and stop its worker.
    expect(report.mcp.workerStopsMidCall).toBeGreaterThan(0);
    expect(report.mcp.serverProcesses).toBeGreaterThan(0);
    expect(report.mcp.serverProcessesLeft).toBe(0);
    // Sub-agent runs: each call's child was started exactly once and settled with a valid transcript,
    // its caller got its answer (or a cancellation, aborted), and the model never saw a child's finished
    // step again; the second SIGKILL waits (up to 15 s) for a child in flight and stops its worker.
    const sub = report.subagents;
    expect(sub.runs).toBe(2);
    expect(sub.calls).toBeGreaterThan(1);
    expect(sub.twoAtOnce).toBeGreaterThan(0);
    expect([sub.startedOnce + sub.notStarted, sub.startedTwice, sub.failed, sub.restarted]).toEqual([
      sub.calls,
      0,
      0,
      0,
    ]);
    expect(sub.valid).toBe(sub.startedOnce);
    expect(sub.answered + sub.cancelled).toBe(sub.calls);
    expect(sub.modelRequests).toBeLessThanOrEqual(sub.llmAttempts + sub.unrecordedRequests);
    expect(sub.charges + sub.mcp.pay).toBeGreaterThan(0);
  },
);
