import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';

/** Where payloads above the threshold go instead of into Temporal's history. */
export type PayloadStorageSettings =
  | { kind: 'off' }
  | { kind: 'local'; directory: string; thresholdBytes: number }
  | {
      kind: 's3';
      bucket: string;
      prefix: string;
      endpoint: string | undefined;
      region: string;
      forcePathStyle: boolean;
      thresholdBytes: number;
    };

/** The shared token stream on Redis Streams. */
export interface RedisChunkSettings {
  url: string;
  /** Entries kept per run (the stream is trimmed exactly to this length on every append). */
  maxEntriesPerRun: number;
  /** A run's stream expires this long after its last chunk. */
  ttlSeconds: number;
  keyPrefix: string;
}

/** How to reach Temporal: address, TLS and API key, as Temporal's own environment configuration gives them. */
interface TemporalConnectionSettings {
  address: string;
  tls?: ClientConnectConfig['connectionOptions']['tls'];
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** Settings a worker and the CLI read from the environment, with their defaults. */
export interface PatchloopConfig {
  temporalAddress: string;
  /**
   * The whole connection (TLS, API key, gRPC metadata) from Temporal's environment configuration:
   * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_PROFILE`
   * and the config file, the names the `temporal` CLI uses. Absent: a plain connection to the address.
   */
  temporalConnection?: TemporalConnectionSettings;
  namespace: string;
  taskQueue: string;
  openaiBaseUrl: string | undefined;
  openaiApiKey: string | undefined;
  /**
   * PATCHLOOP_PROVIDER_PROFILE and PATCHLOOP_PROVIDER_API: the worker's provider kind and wire format
   * (checked against the runtime's choices when a worker starts).
   */
  providerProfile?: string;
  providerApi?: string;
  model: string;
  /** `PATCHLOOP_MODEL_WINDOWS`: context windows (tokens) by model name, beside patchloop's table. */
  modelWindows: Record<string, number>;
  /**
   * How long the server waits for a worker's sticky queue before handing a workflow task to any worker.
   * Lower it where workers die often (tests); Temporal's default is 10 s.
   */
  stickyQueueTimeout: string | undefined;
  /**
   * Worker Versioning (`PATCHLOOP_DEPLOYMENT_NAME` and `PATCHLOOP_BUILD_ID`, both or neither): the worker
   * polls as this version of the deployment; absent, it is unversioned.
   */
  deployment?: WorkerDeployment | undefined;
  /** The worker's token-stream endpoint (SSE): port (0 picks a free one), bind host, and the URL to announce. */
  streamPort: number;
  streamHost: string;
  streamUrl: string | undefined;
  /**
   * Secret the per-run stream tokens derive from. Random per process when unset; set the same value on
   * every worker behind one stream URL.
   */
  streamSecret: string | undefined;
  /** Payloads by reference (External Storage): where they go, for workers and clients alike. */
  payloadStorage: PayloadStorageSettings;
  /** AES-256-GCM payload encryption (`PATCHLOOP_ENCRYPTION_KEY`); plain JSON payloads when absent. */
  encryption?: EncryptionSettings | undefined;
  /** The shared token stream (`REDIS_URL`): chunks go through Redis Streams instead of staying in the worker. */
  redis?: RedisChunkSettings | undefined;
  /**
   * Worker capacity; unset values get the worker's derived defaults. Only workers read it (the CLI
   * worker from its flags and `workerTuningFromEnvironment`), so other commands ignore bad values.
   */
  workerTuning?: WorkerTuning;
}

/** A worker's version in a Worker Deployment. */
export interface WorkerDeployment {
  name: string;
  buildId: string;
}

/** The deployment version the environment names; both variables or neither. */
function deploymentFromEnvironment(env: NodeJS.ProcessEnv): WorkerDeployment | undefined {
  const name = env['PATCHLOOP_DEPLOYMENT_NAME'] || undefined;
  const buildId = env['PATCHLOOP_BUILD_ID'] || undefined;
  if (name === undefined && buildId === undefined) return undefined;
  if (name === undefined || buildId === undefined)
    throw new Error('PATCHLOOP_DEPLOYMENT_NAME and PATCHLOOP_BUILD_ID go together: set both, or neither');
  return { name, buildId };
}

/** How much one worker process takes on at once. */
export interface WorkerTuning {
  /** Runs kept in the sticky cache (each holds its state in memory; a miss replays the history). */
  maxCachedWorkflows?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
  maxConcurrentActivityTaskExecutions?: number;
  /**
   * How far V8 lets each heap of the process grow past what its last full collection kept, in percent
   * (`--heap-growing-percent`); 0 leaves it to V8. Process-wide: set only where asked for (the CLI
   * worker sets 50, `WORKER_HEAP_GROWING_PERCENT`).
   */
  heapGrowingPercent?: number;
}

/**
 * The config pointed at an offline model server (the demo's, a scripted one, a test's fake): it needs
 * no key, so a placeholder stands in for one.
 */
export function withOfflineModel(config: PatchloopConfig, url: string, model: string): PatchloopConfig {
  return { ...config, openaiBaseUrl: url, openaiApiKey: 'offline', model };
}

/**
 * `PATCHLOOP_MAX_CACHED_WORKFLOWS`, `PATCHLOOP_MAX_CONCURRENT_WORKFLOW_TASKS`, `PATCHLOOP_MAX_CONCURRENT_ACTIVITIES`,
 * `PATCHLOOP_HEAP_GROWING_PERCENT`.
 */
export function workerTuningFromEnvironment(env: NodeJS.ProcessEnv): WorkerTuning {
  const wholeNumber = (name: string, min: number, max?: number): number | undefined => {
    const text = env[name];
    if (text === undefined || text === '') return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || (max !== undefined && value > max))
      throw new Error(
        `${name} must be a whole number from ${min}${max !== undefined ? ` to ${max}` : ''}, not '${text}'`,
      );
    return value;
  };
  const tuning: WorkerTuning = {};
  const cached = wholeNumber('PATCHLOOP_MAX_CACHED_WORKFLOWS', 1);
  const workflowTasks = wholeNumber('PATCHLOOP_MAX_CONCURRENT_WORKFLOW_TASKS', 1);
  const activities = wholeNumber('PATCHLOOP_MAX_CONCURRENT_ACTIVITIES', 1);
  if (cached !== undefined) tuning.maxCachedWorkflows = cached;
  if (workflowTasks !== undefined) tuning.maxConcurrentWorkflowTaskExecutions = workflowTasks;
  if (activities !== undefined) tuning.maxConcurrentActivityTaskExecutions = activities;
  const growing = wholeNumber('PATCHLOOP_HEAP_GROWING_PERCENT', 0, 1000);
  if (growing !== undefined) tuning.heapGrowingPercent = growing;
  return tuning;
}

/** `patchloop worker`'s flags that an environment variable sets too, and the variable: a flag given wins. */
const WORKER_FLAG_VARIABLES = {
  'max-cached-workflows': 'PATCHLOOP_MAX_CACHED_WORKFLOWS',
  'max-concurrent-workflow-tasks': 'PATCHLOOP_MAX_CONCURRENT_WORKFLOW_TASKS',
  'max-concurrent-activities': 'PATCHLOOP_MAX_CONCURRENT_ACTIVITIES',
  'heap-growing-percent': 'PATCHLOOP_HEAP_GROWING_PERCENT',
  'deployment-name': 'PATCHLOOP_DEPLOYMENT_NAME',
  'build-id': 'PATCHLOOP_BUILD_ID',
  'metrics-address': 'PATCHLOOP_METRICS_ADDRESS',
  'workflow-bundle': 'PATCHLOOP_WORKFLOW_BUNDLE',
} as const;

/** The values of `patchloop worker`'s flags that have a variable (undefined: not given). */
type WorkerFlags = Partial<Record<keyof typeof WORKER_FLAG_VARIABLES, string | undefined>>;

/** What a worker process reads beside `configFromEnvironment`: each from its flag, else its variable. */
export interface WorkerProcessSettings {
  tuning: WorkerTuning;
  deployment: WorkerDeployment | undefined;
  /** `PATCHLOOP_METRICS_ADDRESS`: where the Prometheus exporter listens (HOST:PORT). */
  metricsAddress: string | undefined;
  /** `PATCHLOOP_WORKFLOW_BUNDLE`: the file `patchloop bundle` wrote. */
  workflowBundle: string | undefined;
}

/**
 * The worker process's settings, each from its flag, else its variable (`workerTuningFromEnvironment`,
 * `deploymentFromEnvironment`, `PATCHLOOP_METRICS_ADDRESS`, `PATCHLOOP_WORKFLOW_BUNDLE`). A bad value
 * throws, naming the flag and its variable.
 */
export function workerSettingsFromEnvironment(
  flags: WorkerFlags,
  env: NodeJS.ProcessEnv = process.env,
): WorkerProcessSettings {
  const given: NodeJS.ProcessEnv = { ...env };
  for (const [flag, variable] of Object.entries(WORKER_FLAG_VARIABLES))
    given[variable] = flags[flag as keyof WorkerFlags] ?? env[variable];
  const flagOf = (variable: string) =>
    Object.entries(WORKER_FLAG_VARIABLES).find(([, name]) => name === variable)?.[0] ?? variable;
  return {
    tuning: reworded(
      () => workerTuningFromEnvironment(given),
      (message) => message.replace(/^PATCHLOOP_[A-Z_]+/, (name) => `--${flagOf(name)} (${name})`),
    ),
    deployment: reworded(
      () => deploymentFromEnvironment(given),
      (message) => `${message} (--deployment-name and --build-id)`,
    ),
    metricsAddress: given['PATCHLOOP_METRICS_ADDRESS'],
    workflowBundle: given['PATCHLOOP_WORKFLOW_BUNDLE'],
  };
}

/** The value `read` gives, or its error with the message `reword` makes of it. */
function reworded<T>(read: () => T, reword: (message: string) => string): T {
  try {
    return read();
  } catch (error) {
    throw new Error(reword((error as Error).message));
  }
}

export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): PatchloopConfig {
  const temporalConnection = temporalConnectionFromEnvironment(env);
  return {
    temporalAddress: temporalConnection.address,
    temporalConnection,
    namespace: temporalConnection.namespace,
    taskQueue: env['PATCHLOOP_TASK_QUEUE'] || 'patchloop',
    openaiBaseUrl: env['OPENAI_BASE_URL'] || undefined,
    openaiApiKey: env['OPENAI_API_KEY'] || undefined,
    ...(env['PATCHLOOP_PROVIDER_PROFILE'] ? { providerProfile: env['PATCHLOOP_PROVIDER_PROFILE'] } : {}),
    ...(env['PATCHLOOP_PROVIDER_API'] ? { providerApi: env['PATCHLOOP_PROVIDER_API'] } : {}),
    model: env['PATCHLOOP_MODEL'] || 'gpt-4o-mini',
    modelWindows: parseModelWindows(env['PATCHLOOP_MODEL_WINDOWS'] ?? ''),
    stickyQueueTimeout: env['PATCHLOOP_STICKY_QUEUE_TIMEOUT'] || undefined,
    // Checked by the worker, the one that uses it (`deploymentFromEnvironment`): other commands ignore it.
    deployment:
      env['PATCHLOOP_DEPLOYMENT_NAME'] && env['PATCHLOOP_BUILD_ID'] ? deploymentFromEnvironment(env) : undefined,
    streamPort: Number(env['PATCHLOOP_STREAM_PORT'] || 0),
    streamHost: env['PATCHLOOP_STREAM_HOST'] || '127.0.0.1',
    streamUrl: env['PATCHLOOP_STREAM_URL'] || undefined,
    streamSecret: env['PATCHLOOP_STREAM_SECRET'] || undefined,
    payloadStorage: payloadStorageFromEnvironment(env),
    encryption: encryptionFromEnvironment(env),
    redis: redisFromEnvironment(env),
  };
}

/**
 * `REDIS_URL` (e.g. `redis://:password@host:6379/0`, `rediss://` for TLS) turns on the shared token
 * stream; `PATCHLOOP_REDIS_STREAM_MAXLEN` entries are kept per run (10,000) and a run's stream expires
 * `PATCHLOOP_REDIS_STREAM_TTL_SECONDS` (3,600) after its last chunk.
 */
function redisFromEnvironment(env: NodeJS.ProcessEnv): RedisChunkSettings | undefined {
  const url = env['REDIS_URL'];
  if (!url) return undefined;
  if (!/^rediss?:\/\//.test(url))
    // Not echoed: the URL may hold a password.
    throw new Error('REDIS_URL must start with redis:// or rediss://');
  const whole = (name: string, fallback: number) => {
    const text = env[name];
    const value = Number(text || fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number from 1, not '${text}'`);
    return value;
  };
  return {
    url,
    maxEntriesPerRun: whole('PATCHLOOP_REDIS_STREAM_MAXLEN', 10_000),
    ttlSeconds: whole('PATCHLOOP_REDIS_STREAM_TTL_SECONDS', 3600),
    keyPrefix: env['PATCHLOOP_REDIS_KEY_PREFIX'] ?? 'patchloop:chunks:',
  };
}

/**
 * `PATCHLOOP_PAYLOAD_STORAGE`: `local` (default: `PATCHLOOP_PAYLOAD_DIR`, `.patchloop/payloads`), `s3`
 * (`PATCHLOOP_S3_BUCKET`, `PATCHLOOP_S3_PREFIX`, `PATCHLOOP_S3_ENDPOINT` or `AWS_ENDPOINT_URL_S3`,
 * `AWS_REGION`; credentials from the AWS SDK's usual chain) or `off` (every payload inline: the 2 MB
 * limit applies). Payloads above `PATCHLOOP_PAYLOAD_THRESHOLD_BYTES` (256 KiB) go by reference.
 */
function payloadStorageFromEnvironment(env: NodeJS.ProcessEnv): PayloadStorageSettings {
  const kind = env['PATCHLOOP_PAYLOAD_STORAGE'] || 'local';
  const thresholdBytes = Number(env['PATCHLOOP_PAYLOAD_THRESHOLD_BYTES'] || 256 * 1024);
  // Above about 1.5 MB a payload under the threshold could still break Temporal's 2 MB limit.
  if (!Number.isInteger(thresholdBytes) || thresholdBytes < 0 || thresholdBytes > 1024 * 1024) {
    throw new Error(
      `PATCHLOOP_PAYLOAD_THRESHOLD_BYTES must be a whole number of bytes from 0 to 1048576, not '${env['PATCHLOOP_PAYLOAD_THRESHOLD_BYTES']}'`,
    );
  }
  if (kind === 'off') return { kind: 'off' };
  if (kind === 'local')
    return { kind, directory: resolve(env['PATCHLOOP_PAYLOAD_DIR'] || join('.patchloop', 'payloads')), thresholdBytes };
  if (kind !== 's3') throw new Error(`PATCHLOOP_PAYLOAD_STORAGE must be local, s3 or off, not '${kind}'`);
  const bucket = env['PATCHLOOP_S3_BUCKET'];
  if (!bucket) throw new Error('PATCHLOOP_PAYLOAD_STORAGE=s3 needs PATCHLOOP_S3_BUCKET');
  const endpoint = env['PATCHLOOP_S3_ENDPOINT'] || env['AWS_ENDPOINT_URL_S3'] || env['AWS_ENDPOINT_URL'] || undefined;
  return {
    kind,
    bucket,
    prefix: env['PATCHLOOP_S3_PREFIX'] ?? 'patchloop/payloads/',
    endpoint,
    region: env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || 'us-east-1',
    // Self-hosted stores (MinIO, moto) address buckets by path, not by host name.
    forcePathStyle: (env['PATCHLOOP_S3_FORCE_PATH_STYLE'] ?? (endpoint ? 'true' : 'false')) === 'true',
    thresholdBytes,
  };
}

/** A 32-byte AES key and the id payloads name it by. */
export interface EncryptionKey {
  id: string;
  key: Uint8Array;
}

/** The active key encrypts; it and the previous keys decrypt (rotation: add the new, keep the old). */
export interface EncryptionSettings {
  active: EncryptionKey;
  previous: EncryptionKey[];
}

/** A key from base64 (32 bytes); the id defaults to a short fingerprint of the key. */
export function parseKey(base64: string, id?: string): EncryptionKey {
  const key = Buffer.from(base64.trim(), 'base64');
  if (key.length !== 32) throw new Error(`an encryption key is 32 bytes in base64; this one is ${key.length} bytes`);
  return { id: id || createHash('sha256').update(key).digest('hex').slice(0, 12), key };
}

/**
 * `PATCHLOOP_ENCRYPTION_KEY` (base64 of 32 bytes), `PATCHLOOP_ENCRYPTION_KEY_ID` (optional) and
 * `PATCHLOOP_ENCRYPTION_PREVIOUS_KEYS` (`id:base64,id:base64`, or bare base64 keys). Undefined when
 * no key is set: payloads are then stored as plain JSON.
 */
export function encryptionFromEnvironment(env: NodeJS.ProcessEnv): EncryptionSettings | undefined {
  const active = env['PATCHLOOP_ENCRYPTION_KEY'];
  if (!active) return undefined;
  const previous = (env['PATCHLOOP_ENCRYPTION_PREVIOUS_KEYS'] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const colon = entry.indexOf(':');
      return colon > 0 ? parseKey(entry.slice(colon + 1), entry.slice(0, colon)) : parseKey(entry);
    });
  return { active: parseKey(active, env['PATCHLOOP_ENCRYPTION_KEY_ID']), previous };
}

/**
 * Temporal's environment configuration (`@temporalio/envconfig`): the profile `TEMPORAL_PROFILE` of the
 * config file (`TEMPORAL_CONFIG_FILE`, or the default path), overridden by `TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`, `TEMPORAL_TLS_CLIENT_CERT_PATH`,
 * `TEMPORAL_TLS_CLIENT_KEY_PATH`, `TEMPORAL_TLS_SERVER_CA_CERT_PATH`, `TEMPORAL_TLS_SERVER_NAME`.
 */
function temporalConnectionFromEnvironment(env: NodeJS.ProcessEnv): TemporalConnectionSettings & { namespace: string } {
  const variables = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== ''),
  );
  const loaded = loadClientConnectConfig({
    overrideEnvVars: variables,
    ...(variables['TEMPORAL_PROFILE'] ? { profile: variables['TEMPORAL_PROFILE'] } : {}),
  });
  const options = loaded.connectionOptions;
  return {
    address: options.address || 'localhost:7233',
    namespace: loaded.namespace || 'default',
    ...(options.tls !== undefined && options.tls !== false ? { tls: options.tls } : {}),
    ...(options.apiKey ? { apiKey: String(options.apiKey) } : {}),
    ...(options.metadata ? { metadata: options.metadata as Record<string, string> } : {}),
  };
}

/** Options for `Connection.connect` / `NativeConnection.connect`: the configured connection, at `address`. */
export function connectionOptions(config: Pick<PatchloopConfig, 'temporalAddress' | 'temporalConnection'>) {
  const connection = config.temporalConnection;
  return {
    address: config.temporalAddress,
    ...(connection?.tls !== undefined ? { tls: connection.tls } : {}),
    ...(connection?.apiKey ? { apiKey: connection.apiKey } : {}),
    ...(connection?.metadata ? { metadata: connection.metadata } : {}),
  };
}

/** `PATCHLOOP_MODEL_WINDOWS`: `model=tokens` pairs separated by commas. Throws, naming the bad entry. */
export function parseModelWindows(text: string): Record<string, number> {
  const windows: Record<string, number> = {};
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const at = entry.lastIndexOf('=');
    const model = entry.slice(0, at).trim();
    const tokens = Number(entry.slice(at + 1).trim());
    if (at <= 0 || model === '' || !Number.isInteger(tokens) || tokens <= 0)
      throw new Error(`PATCHLOOP_MODEL_WINDOWS: '${entry}' is not model=tokens with a whole number of tokens above 0`);
    windows[model] = tokens;
  }
  return windows;
}

/**
 * Where the Temporal web UI is, for links the CLI prints: `PATCHLOOP_WEB_UI_URL`, else the dev server's
 * UI beside a local server on its default port (`patchloop server`: port + 1000); null when unknown.
 */
function webUiUrl(
  config: Pick<PatchloopConfig, 'temporalAddress'>,
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const given = env['PATCHLOOP_WEB_UI_URL'];
  if (given) return given.replace(/\/+$/, '');
  const local = /^(localhost|127\.0\.0\.1):(\d+)$/.exec(config.temporalAddress);
  return local ? `http://${local[1]}:${Number(local[2]) + 1000}` : null;
}

/** A run's page in the web console, from `PATCHLOOP_CONSOLE_URL` (where `patchloop console` is reached); null when unset. */
export function consoleRunUrl(workflowId: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const base = env['PATCHLOOP_CONSOLE_URL']?.replace(/\/+$/, '');
  return base ? `${base}/runs/${encodeURIComponent(workflowId)}` : null;
}

/** A workflow's page in the Temporal web UI (`webUiUrl`), or null when the UI's address is unknown. */
export function workflowUiUrl(
  config: Pick<PatchloopConfig, 'temporalAddress' | 'namespace'>,
  workflowId: string,
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const ui = webUiUrl(config, env);
  return ui
    ? `${ui}/namespaces/${encodeURIComponent(config.namespace)}/workflows/${encodeURIComponent(workflowId)}`
    : null;
}
