import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli, startCliWorker } from '../support/cli';
import { temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';

/**
 * Two projects on one dev server, each with its own agents file and a worker started in its folder,
 * both on the task queue neither set (here one queue of this test's, as the default 'patchloop' would
 * be): the second worker says at start that the first polls its queue too, and a run of the first
 * project's agent that the second takes fails with a message that names the first worker, what it
 * serves, and the fix.
 */
const folder = mkdtempSync(join(tmpdir(), 'patchloop-two-projects-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function project(name: string, agent: string): string {
  const path = join(folder, name);
  mkdirSync(path);
  writeFileSync(join(path, 'agents.json'), JSON.stringify([{ name: agent, instructions: 'Answer briefly.' }]));
  return path;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

it("a second project's worker on the same task queue is told at start, and a run it takes of the first project's agent fails naming the first worker and the fix", async () => {
  const weather = project('weather', 'forecaster');
  const translation = project('translation', 'translator');
  const taskQueue = `two-projects-${randomUUID()}`;
  const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: taskQueue };
  const start = (cwd: string) => startCliWorker(['--agents', 'agents.json', '--fake-model'], env, { cwd });
  const first = await start(weather);
  const second = await start(translation);
  const host = escaped(hostname());
  const weatherWorker = `${first.pid}@${host} \\(in ${escaped(weather)}; agents: forecaster\\)`;
  const fix = escaped('give each project its own task queue (PATCHLOOP_TASK_QUEUE, or worker --task-queue)');
  try {
    // The second names the first (once it has asked the server, just after its start line); the first
    // found nobody on the queue.
    const warnings = () =>
      second
        .output()
        .split('\n')
        .filter((line) => line.includes('[WARN]'));
    const [warning, ...others] = await eventually(
      () => (warnings().length > 0 ? warnings() : undefined),
      30_000,
      'the second worker to warn',
    );
    expect(others).toEqual([]);
    expect(first.output()).not.toContain('[WARN]');
    expect(warning).toMatch(
      new RegExp(
        `\\[WARN\\] task queue '${taskQueue}' is also polled by ${weatherWorker}: runs of either worker's agents may go to the other and fail there \\(UnknownAgent\\) or run with its tools and model; ${fix}$`,
      ),
    );
  } finally {
    await first.stop();
  }
  try {
    // With the first worker gone (still listed by the server for a few minutes), the second takes the run.
    const failed = await runCli(['run', 'forecaster', 'What is the weather in Paris?'], env);
    const message = `unknown agent 'forecaster'; this worker serves: translator; this worker \\(${second.pid}@${host}\\) shares task queue '${taskQueue}' with ${weatherWorker}, which serve\\(s\\) 'forecaster': ${fix}`;
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(new RegExp(`^error: ${message}\\n$`));
    // The second worker's terminal says it too, once.
    const line = await eventually(
      () =>
        second
          .output()
          .split('\n')
          .find((each) => each.includes("unknown agent 'forecaster'")),
      30_000,
      'the worker to report the run',
    );
    expect(line).toMatch(
      new RegExp(
        `\\[WARN\\] run run-\\S+ \\(agentRun\\): activity describeAgentLocally failed: UnknownAgent: ${message}$`,
      ),
    );
  } finally {
    await second.stop();
  }
});
