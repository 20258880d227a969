import { spawn } from 'node:child_process';
import { cliEntry } from '../../support/compiled';
import { repositoryRoot } from '../../support/repository';
import { eventually } from './wait';

/** The CLI (`cliEntry`) on a pseudo-terminal (Python's pty module), so it behaves as it does for a person. */
export function onTerminal(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(
    'python3',
    ['-c', 'import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)', process.execPath, cliEntry(), ...args],
    { cwd: repositoryRoot, env },
  );
  let screen = '';
  child.stdout.on('data', (data: Buffer) => (screen += data.toString()));
  child.stderr.on('data', (data: Buffer) => (screen += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    child,
    screen: () => screen,
    /** Waits for text on the screen, then types a line. */
    async answer(prompt: string, line: string) {
      await eventually(() => (screen.includes(prompt) ? true : undefined), 60_000, `prompt '${prompt}'\n${screen}`);
      child.stdin.write(`${line}\r`);
    },
    /** Waits for text on the screen, then presses Ctrl-C (the terminal turns it into SIGINT). */
    async interrupt(after: string) {
      await eventually(() => (screen.includes(after) ? true : undefined), 120_000, `'${after}'\n${screen}`);
      child.stdin.write('\x03');
    },
    exited,
  };
}
