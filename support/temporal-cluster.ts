import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { freePort, portIsFree } from '../src/worker/free-port';
import { findTemporalCli, isServing, stopProcess } from '../src/worker/temporal-cli';
import { repositoryRoot } from './repository';

/**
 * A production-shaped Temporal for tests and benchmarks: `temporal-server` (built from
 * `go.temporal.io/server` by scripts/setup-temporal-server.sh, cached outside the clone) on a
 * PostgreSQL cluster of its own (Debian's), with SQL advanced visibility, set up by the same scripts
 * `deploy/temporal/` gives the compose stack: the schemas by `setup-schema.sh`, the server by
 * `start-server.sh` (the configuration temporal-server embeds, filled from the environment), the
 * namespace by `create-namespace.sh`.
 */

/** The server version the set-up builds; docker-compose.yml pins the same images. */
export const TEMPORAL_SERVER_VERSION = '1.32.0';

/** Where scripts/setup-temporal-server.sh leaves temporal-server, temporal-sql-tool and the schema files. */
function temporalServerFolder(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env['PATCHLOOP_CACHE'] ?? join(homedir(), '.cache', 'patchloop');
  return join(cache, `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export interface TemporalCluster {
  /** The frontend's gRPC address (`127.0.0.1:PORT`). */
  address: string;
  /** The frontend's HTTP API. */
  httpUrl: string;
  /** The PostgreSQL port (user `temporal`, no password, loopback only). */
  databasePort: number;
  /** PostgreSQL's data folder (removed by `stop`). */
  databaseFolder: string;
  /** Stops temporal-server (SIGKILL with `kill`, else SIGTERM) and starts it again on the same databases. */
  restartServer(how?: { kill?: boolean }): Promise<void>;
  /** temporal-server's pid (it changes with each restart). */
  serverPid(): number | undefined;
  stop(): Promise<void>;
}

export interface TemporalClusterOptions {
  /** A folder of its own for the dynamic configuration (the database gets one in the temporary folder). */
  folder: string;
  /** Dynamic configuration values (deploy/temporal/dynamicconfig.yaml, the compose stack's, sets none). */
  dynamicConfig?: Record<string, string | number | boolean>;
}

/** PostgreSQL's programs (initdb, postgres): the newest installed version's. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error('PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): run bash scripts/setup.sh');
  return join(root, versions[0]!, 'bin');
}

/** The cached server programs, or an error saying how to build them. */
function serverPrograms(): { server: string; sqlTool: string; schemas: string } {
  const folder = temporalServerFolder();
  const programs = {
    server: join(folder, 'temporal-server'),
    sqlTool: join(folder, 'temporal-sql-tool'),
    schemas: join(folder, 'schema'),
  };
  for (const path of Object.values(programs))
    if (!existsSync(path))
      throw new Error(`${path} is missing: bash scripts/setup-temporal-server.sh builds it (once per machine)`);
  return programs;
}

function postgresUser(): RunAs {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = (line ?? '').split(':');
  if (!uid || !gid) throw new Error('running as root needs the postgres user (Debian’s postgresql package makes it)');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Who a process runs as: PostgreSQL refuses root, so as root its programs run as the `postgres` user. */
type RunAs = { uid: number; gid: number } | undefined;

function run(program: string, args: string[], env: NodeJS.ProcessEnv, what: string, as?: RunAs): void {
  const result = spawnSync(program, args, { env, encoding: 'utf8', ...as });
  if (result.status !== 0)
    throw new Error(`${what} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
}

async function waitFor(check: () => boolean, child: ChildProcess, what: string, log: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!check()) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}): ${log().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${what} did not come up in 120 s: ${log().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function started(
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  as?: RunAs,
): { child: ChildProcess; log: () => string } {
  const child = spawn(program, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...as });
  let output = '';
  const keep = (data: Buffer) => (output = (output + data.toString()).slice(-20_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, log: () => output };
}

/**
 * A PostgreSQL cluster in a folder of its own (the postgres user's, when run as root: it must reach it),
 * on a free loopback port, its socket in the folder too.
 */
async function startPostgres(): Promise<{ port: number; child: ChildProcess; data: string }> {
  const bin = postgresBin();
  const data = mkdtempSync(join(tmpdir(), 'patchloop-postgres-'));
  const owner = postgresUser();
  if (owner) chownSync(data, owner.uid, owner.gid);
  try {
    run(join(bin, 'initdb'), ['-D', data, '-U', 'temporal', '-A', 'trust'], process.env, 'initdb', owner);
  } catch (error) {
    rmSync(data, { recursive: true, force: true });
    throw error;
  }
  const port = await freePort();
  // A test database: no fsync (the machine does not crash under a test; temporal-server's restarts
  // and kills do not touch PostgreSQL, which keeps every commit).
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    data,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=300',
  ];
  const { child, log } = started(join(bin, 'postgres'), args, process.env, owner);
  const ready = join(bin, 'pg_isready');
  try {
    await waitFor(
      () =>
        spawnSync(ready, ['-h', '127.0.0.1', '-p', String(port), '-U', 'temporal'], { timeout: 10_000 }).status === 0,
      child,
      'PostgreSQL',
      log,
    );
  } catch (error) {
    await stopProcess(child, 'SIGKILL');
    rmSync(data, { recursive: true, force: true });
    throw error;
  }
  return { port, child, data };
}

/**
 * Stores the bytea columns (histories, mutable state, payloads) of both databases uncompressed and out
 * of line (EXTERNAL, in place of PostgreSQL's default compression of large values), so that a test that
 * looks for a value in the database's files finds it wherever it was written. Only storage changes.
 */
function storeUncompressed(port: number): void {
  const statement = `DO $$ DECLARE c record; BEGIN
    FOR c IN SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND data_type = 'bytea' LOOP
      EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STORAGE EXTERNAL', c.table_name, c.column_name);
    END LOOP; END $$;`;
  for (const database of ['temporal', 'temporal_visibility'])
    run(
      join(postgresBin(), 'psql'),
      [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'temporal',
        '-d',
        database,
        '-v',
        'ON_ERROR_STOP=1',
        '-c',
        statement,
      ],
      process.env,
      `psql (${database})`,
    );
}

function dynamicConfigFile(folder: string, values: Record<string, string | number | boolean>): string {
  const file = join(folder, 'dynamicconfig.yaml');
  const yaml = Object.entries(values)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
    .join('');
  writeFileSync(file, yaml || '{}\n');
  return file;
}

/**
 * Free loopback ports for the server's services, all below 32768: temporal-server keeps its members'
 * ports in a smallint column (a port from the kernel's ephemeral range fails its membership heartbeat).
 */
async function membershipSafePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.includes(port) && (await portIsFree(port))) ports.push(port);
  }
  return ports;
}

/** The environment the deploy scripts read, for a server on these ports and this database. */
async function serverEnvironment(
  folder: string,
  databasePort: number,
  dynamicConfig: Record<string, string | number | boolean>,
): Promise<{ env: NodeJS.ProcessEnv; grpcPort: number; httpPort: number }> {
  const programs = serverPrograms();
  const ports = await membershipSafePorts(10);
  const [grpcPort, httpPort] = ports as [number, number];
  const names = [
    'FRONTEND_GRPC_PORT',
    'FRONTEND_HTTP_PORT',
    'INTERNAL_FRONTEND_HTTP_PORT',
    'FRONTEND_MEMBERSHIP_PORT',
    'MATCHING_GRPC_PORT',
    'MATCHING_MEMBERSHIP_PORT',
    'HISTORY_GRPC_PORT',
    'HISTORY_MEMBERSHIP_PORT',
    'WORKER_GRPC_PORT',
    'WORKER_MEMBERSHIP_PORT',
  ];
  const cli = findTemporalCli();
  if (!cli) throw new Error('the temporal CLI is missing: run bash scripts/setup.sh');
  const env: NodeJS.ProcessEnv = {
    // Nothing else of this process's environment: the server's configuration template and the temporal
    // CLI read many variables (TEMPORAL_TLS_*, SQL_TLS_*, DBNAME, PROMETHEUS_ENDPOINT, ...).
    HOME: process.env['HOME'],
    PATH: [dirname(programs.server), dirname(cli), process.env['PATH']].join(delimiter),
    ...Object.fromEntries(names.map((name, index) => [name, String(ports[index])])),
    DB: 'postgres12',
    DB_PORT: String(databasePort),
    POSTGRES_SEEDS: '127.0.0.1',
    POSTGRES_USER: 'temporal',
    POSTGRES_PWD: '',
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    LOG_LEVEL: 'error',
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfigFile(folder, dynamicConfig),
    // setup-schema.sh's temporal-sql-tool
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: '127.0.0.1',
    SQL_PORT: String(databasePort),
    SQL_USER: 'temporal',
    SQL_PASSWORD: '',
    TEMPORAL_SCHEMA_DIR: programs.schemas,
    // create-namespace.sh's temporal CLI
    TEMPORAL_ADDRESS: `127.0.0.1:${grpcPort}`,
  };
  return { env, grpcPort, httpPort };
}

/**
 * Starts PostgreSQL, sets up Temporal's schemas, starts temporal-server and registers the `default`
 * namespace: a cluster ready for workers.
 */
export async function startTemporalCluster(options: TemporalClusterOptions): Promise<TemporalCluster> {
  mkdirSync(options.folder, { recursive: true });
  const database = await startPostgres();
  let server: { child: ChildProcess; log: () => string } | undefined;
  try {
    const { env, grpcPort, httpPort } = await serverEnvironment(
      options.folder,
      database.port,
      options.dynamicConfig ?? {},
    );
    const scripts = join(repositoryRoot, 'deploy', 'temporal');
    run('sh', [join(scripts, 'setup-schema.sh')], env, 'setup-schema.sh');
    storeUncompressed(database.port);
    const address = `127.0.0.1:${grpcPort}`;
    const start = async () => {
      server = started('sh', [join(scripts, 'start-server.sh')], env);
      const cli = findTemporalCli()!;
      await waitFor(() => isServing(cli, address), server.child, 'temporal-server', server.log);
    };
    await start();
    run('sh', [join(scripts, 'create-namespace.sh')], env, 'create-namespace.sh');
    return {
      address,
      httpUrl: `http://127.0.0.1:${httpPort}`,
      databasePort: database.port,
      databaseFolder: database.data,
      serverPid: () => server?.child.pid,
      restartServer: async (how = {}) => {
        await stopProcess(server!.child, how.kill ? 'SIGKILL' : 'SIGTERM');
        await start();
      },
      stop: async () => {
        // Nothing is kept beyond the test: no graceful shutdown (temporal-server's takes seconds).
        if (server) await stopProcess(server.child, 'SIGKILL');
        await stopProcess(database.child, 'SIGINT');
        rmSync(database.data, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (server) await stopProcess(server.child, 'SIGKILL');
    await stopProcess(database.child, 'SIGINT');
    rmSync(database.data, { recursive: true, force: true });
    throw error;
  }
}
