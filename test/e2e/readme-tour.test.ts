import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { PatchloopClient } from '../../src/client/patchloop-client';
import { configFromEnvironment } from '../../src/config/environment';
import { AgentDefinition } from '../../src/runtime';
import { freePort } from '../../src/worker/free-port';
import { repositoryRoot } from '../../support/repository';
import { eventually } from '../support/wait';

/**
 * The README's five-minute tour, run as the README writes it: each command of its bash blocks in a
 * pseudo-terminal (Python's pty), in the folder the tour is in at that point; the server and the worker
 * stay up as they would in their own terminals. Each text block lists lines the commands before it
 * print. Only the server gets ports of its own (`--port`, `--ui-port`, `--http-port`), and every command the test's
 * address and task queue, so the tour never meets another test's server or worker.
 */

interface Block {
  language: string;
  text: string;
}

function tourBlocks(): Block[] {
  const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('## A five-minute tour');
  const end = readme.indexOf('\n## ', start + 1);
  const tour = readme.slice(start, end);
  return [...tour.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((match) => ({ language: match[1]!, text: match[2]! }));
}

/** A command on a pseudo-terminal: its screen, and its exit code. */
function onTerminal(command: string, cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(
    'python3',
    ['-c', 'import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)', 'bash', '-c', command],
    {
      cwd,
      env,
    },
  );
  let screen = '';
  child.stdout.on('data', (data: Buffer) => (screen += data.toString()));
  child.stderr.on('data', (data: Buffer) => (screen += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, screen: () => screen, exited };
}

const longRunning: ChildProcess[] = [];
afterAll(async () => {
  for (const child of longRunning) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((resolve) => child.once('close', resolve));
    child.kill('SIGINT');
    await exited;
  }
});

it('the five-minute tour works as the README writes it', { timeout: 300_000 }, async () => {
  const blocks = tourBlocks();
  expect(blocks.filter((block) => block.language === 'bash').length).toBeGreaterThan(4);
  // The agents file the README shows is valid as it stands.
  const shown = blocks.find((block) => block.language === 'json')!;
  for (const agent of JSON.parse(shown.text) as unknown[]) AgentDefinition.parse(agent);

  const port = await freePort();
  const uiPort = await freePort();
  const httpPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    PATCHLOOP_TASK_QUEUE: `readme-tour-${Date.now()}`,
    OPENAI_API_KEY: '',
    OPENAI_BASE_URL: '',
  };
  let connected: PatchloopClient | undefined;
  const client = async () => (connected ??= await PatchloopClient.connect(configFromEnvironment(env)));
  let cwd = repositoryRoot;
  let printed = '';
  const ran: string[] = [];
  try {
    for (const block of blocks) {
      if (block.language === 'text') {
        // What the commands since the last text block printed.
        for (const line of block.text.split('\n').filter((line) => line.trim()))
          expect(printed, `after: ${ran.join(' / ')}`).toContain(line.trim());
        printed = '';
        continue;
      }
      if (block.language !== 'bash') continue;
      for (const command of block.text.split('\n').filter((line) => line.trim() && !line.trim().startsWith('#'))) {
        ran.push(command);
        const argv = command.split(/\s+/);
        if (argv[0] === 'npx' && argv[1] === 'patchloop' && (argv[2] === 'server' || argv[2] === 'worker')) {
          // A terminal of its own, left running.
          const full =
            argv[2] === 'server' ? `${command} --port ${port} --ui-port ${uiPort} --http-port ${httpPort}` : command;
          const terminal = onTerminal(full, cwd, env);
          longRunning.push(terminal.child);
          const ready = argv[2] === 'server' ? 'Temporal dev server on' : 'worker polling';
          await eventually(
            () => {
              if (terminal.child.exitCode !== null) throw new Error(`${command} exited:\n${terminal.screen()}`);
              return terminal.screen().includes(ready) ? true : undefined;
            },
            120_000,
            `${command}: '${ready}'`,
          );
          continue;
        }
        const terminal = onTerminal(command, cwd, env);
        const code = await terminal.exited;
        expect(code, `${command}\n${terminal.screen()}`).toBe(0);
        printed += terminal.screen();
        const moved = /^cd (\S+)/.exec(command);
        if (moved) cwd = join(cwd, moved[1]!);
        // A person reads what a run waits for before deciding: the next command comes once the run started
        // without --follow has reached its decision (or its end).
        const started = /patchloop run .* --id (\S+)/.exec(command);
        if (started && !command.includes('--follow')) {
          const run = (await client()).run(started[1]!);
          await eventually(
            async () => {
              const { state } = await run.status();
              return state === 'running' ? undefined : state;
            },
            60_000,
            `${started[1]} to wait for a decision or end`,
          );
        }
      }
    }
    expect(ran.length).toBeGreaterThan(8);
  } finally {
    await connected?.close();
  }
});
