import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { callTools, reply, toolCall as call } from '../../src/fake-model/steps';
import type { RunHandle } from '../../src/client/patchloop-client';
import type { AgentDefinitionInput } from '../../src/runtime';
import { scriptsByAgent } from '../../support/agent-scripts';
import { repositoryRoot } from '../../support/repository';
import { runCli } from '../support/cli';
import { clientOn, listedWorkflows, temporalAddress } from '../support/temporal';
import { eventually, startedChild } from '../support/wait';

/**
 * docs/agents-in-time.md: its worked example (examples/deploy-watcher) run as the page writes it, the
 * example's own test, and waits in sub-agent runs as the page describes them.
 */

const exampleFolder = join(repositoryRoot, 'examples', 'deploy-watcher');

interface Block {
  language: string;
  text: string;
}

/** The code blocks of the page's section under `heading` (up to the next heading of its level). */
function sectionBlocks(heading: string): Block[] {
  const page = readFileSync(join(repositoryRoot, 'docs', 'agents-in-time.md'), 'utf8');
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/agents-in-time.md has no '${heading}'`);
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((match) => ({ language: match[1]!, text: match[2]! }));
}

/** A terminal: the commands typed in it, one after the other, and everything they print. */
interface Terminal {
  screen(): string;
  /** Runs a command to its end (its exit status). */
  type(command: string): Promise<number | null>;
  /** Starts a command that goes on (a worker, a run followed) and does not wait for it. */
  leave(command: string): { exited: Promise<number | null>; interrupt(): Promise<void> };
}

function terminal(cwd: string, env: NodeJS.ProcessEnv): Terminal {
  let screen = '';
  const start = (command: string) => {
    // Its own process group, as a terminal's foreground job: Ctrl-C (SIGINT) reaches npx and what it runs.
    const child = spawn('bash', ['-c', command], { cwd, env, detached: true });
    child.stdout.on('data', (data: Buffer) => (screen += data.toString()));
    child.stderr.on('data', (data: Buffer) => (screen += data.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const interrupt = async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
      await exited;
    };
    return { exited, interrupt };
  };
  return { screen: () => screen, type: (command) => start(command).exited, leave: start };
}

/**
 * Whether `screen` shows the lines of a text block, in order (each a whole line, other lines between
 * them): `…` stands for what varies (times, durations), and any run of spaces for one or more (a
 * table's columns are as wide as its widest entry).
 */
function shows(screen: string, excerpt: string): boolean {
  const patterns = excerpt
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(
      (line) =>
        new RegExp(
          `^${line
            .trim()
            .split('…')
            .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ +/g, ' +'))
            .join('.*')}$`,
        ),
    );
  const lines = screen.split(/\r?\n/).map((line) => line.trim());
  let at = 0;
  for (const pattern of patterns) {
    while (at < lines.length && !pattern.test(lines[at]!)) at += 1;
    if (at === lines.length) return false;
    at += 1;
  }
  return true;
}

/** Each state the run reports (with the tool it waits with), in order, until it completes. */
async function statesUntilDone(run: RunHandle): Promise<string[]> {
  const seen: string[] = [];
  await eventually(
    async () => {
      const status = await run.status();
      const state = [status.state, ...(status.waiting ?? []).map((wait) => wait.tool)].join(' ');
      if (seen.at(-1) !== state) seen.push(state);
      return status.state === 'running' || status.state === 'waiting' ? undefined : true;
    },
    300_000,
    `${run.workflowId} to complete`,
  );
  return seen;
}

describe.concurrent('the worked example: examples/deploy-watcher', () => {
  it('runs as docs/agents-in-time.md writes it: a worker, the run followed, list, show and the build event', async () => {
    const blocks = sectionBlocks('## Worked example: watching a deploy');
    // Its own run id: the page's is the same for every reader, and this server is shared.
    const id = `deploy-${randomUUID().slice(0, 8)}`;
    for (const block of blocks) block.text = block.text.replaceAll('deploy-1', id);
    expect(blocks.map((block) => block.language)).toEqual(['bash', 'bash', 'text', 'bash', 'text', 'text']);
    const taskQueue = `deploy-watcher-${randomUUID()}`;
    const bundle = process.env['PATCHLOOP_TEST_WORKFLOW_BUNDLE'];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: temporalAddress(),
      PATCHLOOP_TASK_QUEUE: taskQueue,
      OPENAI_API_KEY: '',
      OPENAI_BASE_URL: '',
      // The workflow bundle the e2e set-up wrote, as the worker's flag --workflow-bundle would give it.
      ...(bundle ? { PATCHLOOP_WORKFLOW_BUNDLE: bundle } : {}),
    };
    const terminals: Terminal[] = [];
    const running: Array<ReturnType<Terminal['leave']>> = [];
    const client = await clientOn(taskQueue);
    let states: Promise<string[]> | undefined;
    let followed: Promise<number | null> | undefined;
    try {
      for (const block of blocks) {
        if (block.language === 'text') {
          // An excerpt of one terminal's screen: the commands before it print it, in time.
          await eventually(
            () => (terminals.some((shown) => shows(shown.screen(), block.text)) ? true : undefined),
            120_000,
            `a terminal to show:\n${block.text}\n${terminals.map((shown) => shown.screen()).join('\n-----\n')}`,
          );
          continue;
        }
        const typing = terminal(exampleFolder, env);
        terminals.push(typing);
        for (const command of block.text.split('\n').filter((line) => line.trim() !== '')) {
          if (command.startsWith('npx patchloop worker')) {
            running.push(typing.leave(command));
            await eventually(
              () => (typing.screen().includes('worker polling') ? true : undefined),
              120_000,
              `the worker:\n${typing.screen()}`,
            );
          } else if (command.includes('--follow')) {
            const follow = typing.leave(command);
            running.push(follow);
            followed = follow.exited;
            // What the run reports from its start (watched beside the terminals, as the console would).
            states = statesUntilDone(client.run(id));
          } else {
            expect(await typing.type(command), `${command}\n${typing.screen()}`).toBe(0);
          }
        }
      }
      // The followed run ended as it should, and the commands printed nothing unexpected.
      expect(await followed).toBe(0);
      expect(terminals.map((shown) => shown.screen()).join('\n')).not.toMatch(/error|\n\s+at /i);
      // It waited for the build, then slept between checks: `waiting` each time, with its tool.
      const seen = await states!;
      expect(seen.filter((state) => state.startsWith('waiting'))[0]).toBe('waiting wait_for_event');
      expect(seen).toContain('waiting sleep');
      expect(seen.at(-1)).toBe('completed');
      const result = await client.run(id).result();
      expect(result.answer).toBe('The deploy of abc123 is green: all 3 instances are healthy after 3 checks.');
      const calls = result.transcript.flatMap((message) =>
        ((message['tool_calls'] ?? []) as Array<{ function: { name: string } }>).map((entry) => entry.function.name),
      );
      expect(calls).toEqual(['wait_for_event', 'deploy_status', 'sleep', 'deploy_status', 'sleep', 'deploy_status']);
      // Three checks, the last one green.
      const checks = result.transcript
        .filter((message) => message['role'] === 'tool')
        .map((message) => JSON.parse(String(message['content'])) as { state?: string; check?: number })
        .filter((content) => content.check !== undefined);
      expect(checks.map((check) => [check.check, check.state])).toEqual([
        [1, 'rolling_out'],
        [2, 'rolling_out'],
        [3, 'green'],
      ]);
    } finally {
      for (const left of running.reverse()) await left.interrupt();
      await client.close();
    }
  });

  it("passes its own test (npm test: node --test, the scripted model, the client's deliverEvent)", async () => {
    const tested = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('npm', ['test'], {
        cwd: exampleFolder,
        env: { ...process.env, TEMPORAL_ADDRESS: temporalAddress(), OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
      });
      let output = '';
      child.stdout.on('data', (data: Buffer) => (output += data.toString()));
      child.stderr.on('data', (data: Buffer) => (output += data.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
    expect(tested.code, tested.output).toBe(0);
    expect(tested.output).toMatch(/# pass 1\b/);
    expect(tested.output).toMatch(/# fail 0\b/);
  });
});

/** A caller whose sub-agent waits: it sleeps, then waits for the build event. */
const manager: AgentDefinitionInput = {
  name: 'release-manager',
  instructions: 'You manage releases.',
  subagents: ['build-watcher'],
};
const watcher: AgentDefinitionInput = {
  name: 'build-watcher',
  instructions: 'You watch builds.',
  waits: { max_seconds: 3600, events: ['build'] },
};

describe('waits in sub-agent runs', () => {
  it("a sub-agent sleeps and waits for an event delivered to its own run; the caller reports running meanwhile and answers with the child's result", async ({
    startWorld,
  }) => {
    const scripts = scriptsByAgent({
      'release-manager': {
        instructions: manager.instructions,
        steps: [
          callTools([call('m1', 'build-watcher', { input: 'Tell me when build abc123 is green.' })]),
          reply('Released: the watcher says build abc123 is green.'),
        ],
      },
      'build-watcher': {
        instructions: watcher.instructions,
        steps: [
          callTools([call('w1', 'sleep', { seconds: 3600, reason: 'the build takes a while' })]),
          callTools([call('w2', 'wait_for_event', { name: 'build', timeout_seconds: 3600 })]),
          reply('Build abc123 is green.'),
        ],
      },
    });
    const world = await startWorld({ agents: [manager, watcher], fake: { responder: scripts.responder } });
    const env = { TEMPORAL_ADDRESS: temporalAddress(), PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const run = await world.client.start({ agent: 'release-manager', input: 'Release build abc123.' });
    const childId = await startedChild(run, 'm1');
    const child = world.client.run(childId);

    // The child sleeps: it reports waiting; its caller, whose call is the child run, reports running.
    const sleeping = await eventually(async () => {
      const status = await child.status();
      return status.waiting?.[0]?.tool === 'sleep' ? status : undefined;
    });
    expect(sleeping.state).toBe('waiting');
    const caller = await run.status();
    expect([caller.state, caller.waiting ?? [], caller.wake_at ?? null]).toEqual(['running', [], null]);
    // So say their search attributes: `list --status waiting` finds the child, not its caller.
    await eventually(async () =>
      (await listedWorkflows(`WorkflowId = '${childId}' AND PatchloopStatus = 'waiting'`)).length === 1
        ? true
        : undefined,
    );
    expect(await listedWorkflows(`WorkflowId = '${run.workflowId}' AND PatchloopStatus = 'running'`)).toHaveLength(1);
    // `show` of the caller: it runs the call, and lists the child run (as it runs: waiting) and the
    // command that shows it, which says what the child waits for.
    const shown = await runCli(['show', run.workflowId], env);
    expect(shown.stdout).toContain(`agentRun ${run.workflowId}: running`);
    expect(shown.stdout).toContain('now: iteration 1: running tools build-watcher\n');
    expect(shown.stdout).toContain(`  waiting    ${childId} (patchloop show ${childId}`);
    const shownChild = await runCli(['show', childId], env);
    expect(shownChild.stdout).toContain(`agentRun ${childId}: waiting`);
    expect(shownChild.stdout).toMatch(/\nwaiting: sleep until \S+ \(the build takes a while\)\n/);

    // A message posted to the child wakes it early; then it waits for the build event.
    const posted = await runCli(['post', childId, 'The build started.'], env);
    expect(posted.code, posted.stderr).toBe(0);
    await eventually(async () => ((await child.status()).waiting?.[0]?.tool === 'wait_for_event' ? true : undefined));
    // The event goes to the child's run: its caller's agent waits for no events and refuses it.
    const refused = await runCli(['event', run.workflowId, 'build', '{"commit": "abc123"}'], env);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `error: event 'build' refused: this run's agent waits for no events (its "waits.events" is empty)\n`,
    ]);
    const delivered = await runCli(['event', childId, 'build', '{"commit": "abc123", "green": true}'], env);
    expect(delivered.code, delivered.stderr).toBe(0);
    expect(JSON.parse(delivered.stdout)).toMatchObject({ workflow_id: childId, accepted: true, taken_by_wait: true });

    const result = await run.result();
    expect(result).toMatchObject({
      status: 'completed',
      answer: 'Released: the watcher says build abc123 is green.',
    });
    // The caller read the child's answer as its call's result.
    const [, callerRead] = scripts.requests('release-manager');
    expect(callerRead!.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'm1',
      content: '"Build abc123 is green."',
    });
    // The child's transcript: woken by the message, then the event's payload as the wait's result.
    const childMessages = (await child.transcript()).slice(1);
    const results = childMessages
      .filter((message) => message['role'] === 'tool')
      .map((message) => JSON.parse(String(message['content'])) as Record<string, unknown>);
    expect(results).toEqual([
      expect.objectContaining({ woke: 'user_message' }),
      expect.objectContaining({ event: 'build', payload: { commit: 'abc123', green: true } }),
    ]);
    scripts.assertDone();
  });
});
