import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { callTools, reply } from '../../src/fake-model/steps';
import { repositoryRoot } from '../support/reference';
import { startWorld, type TestWorld } from '../support/temporal';

let world: TestWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Runs the CLI as a user would, against the test's server and worker. */
function cli(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repositoryRoot, 'src', 'cli', 'cli.ts'), ...args], {
      cwd: repositoryRoot,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: world!.config.temporalAddress,
        PATCHLOOP_TASK_QUEUE: world!.config.taskQueue,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('CLI against a real dev server', () => {
  it('run --follow prints iterations, tool calls and the answer; show and abort work by id', async () => {
    world = await startWorld({
      fake: { script: [callTools([{ id: 'c1', name: 'add', arguments: '{"a": 2, "b": 3}' }]), reply('The sum is 5.')] },
    });
    const run = await cli(['run', 'assistant', 'What is 2 + 3?', '--id', 'cli-run-1', '--follow']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('-> add {"a":2,"b":3}');
    expect(run.stdout).toContain('<- add: 5');
    expect(run.stdout).toContain('answer: The sum is 5.');
    const show = await cli(['show', 'cli-run-1', '--json']);
    expect(JSON.parse(show.stdout).status.state).toBe('completed');
    const followed = await cli(['follow', 'cli-run-1', '--json']);
    const lines = followed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event_type: string });
    expect(lines[0]!.event_type).toBe('react_start');
    expect(lines.at(-1)!.event_type).toBe('react_end');
    const missing = await cli(['abort', 'no-such-run']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).error.message).toContain('no-such-run');
    expect(missing.stdout + missing.stderr).not.toMatch(/\n\s+at /);
  });

  it('chat talks to a session, reconnects to it by id, and send answers with the turn reply', async () => {
    world = await startWorld({ fake: { script: [reply('hi there'), reply('second reply'), reply('third reply')] } });
    const first = await cli(['chat', 'assistant', '--id', 'cli-session'], 'hello\n/quit\n');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('session cli-session');
    expect(first.stdout).toContain('assistant> hi there');
    const again = await cli(['chat', 'assistant', '--id', 'cli-session'], 'still there?\n/quit\n');
    expect(again.stdout).toContain('1 turns so far');
    expect(again.stdout).toContain('assistant> second reply');
    const send = await cli(['send', 'cli-session', 'third']);
    expect(JSON.parse(send.stdout)).toMatchObject({
      workflow_id: 'cli-session',
      status: 'completed',
      reply: 'third reply',
      turn: 3,
    });
    const transcript = await world.client.session('cli-session').transcript();
    expect(transcript.filter((m) => m['role'] === 'user').map((m) => m['content'])).toEqual([
      'hello',
      'still there?',
      'third',
    ]);
    world.fake.assertDone();
  });

  it('prints usage errors as JSON without a stack trace', async () => {
    world = await startWorld();
    const result = await cli(['run', 'assistant']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).error).toEqual({
      type: 'UsageError',
      message: expect.stringContaining('missing text'),
    });
  });
});
