import { type BundleOptions, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { getHeapStatistics } from 'node:v8';
import { createActivities, McpServers, nudgeAfterAbort, type ProviderSettings } from '../activities';
import type { SecretRedactor } from '../activities/redact';
import { bundleInChildProcess } from './bundle';
import { sourceFile } from './source-file';
import { redactionInterceptor, workerRedactor } from './redaction';
export { workerRedactor } from './redaction';
import { ensureSearchAttributes } from './search-attributes';
import type { Tracing } from './tracing';
import { patchloopDataConverter } from '../storage/data-converter';
import { AgentRegistry } from '../agents/registry';
import { assistantAgent } from '../agents/assistant';
import { exampleTools } from '../tools/examples';
import { missingProviderKeys, ProviderApi, ProviderProfileName, type AgentDefinitionInput } from '../runtime';
import type { Tool } from '../tools/define-tool';
import type { Guardrail } from '../tools/define-guardrail';
import type { LlmFunction } from '../functions/define-llm-function';
import { exampleFunctions } from '../functions/examples';
import {
  connectionOptions,
  consoleRunUrl,
  workflowUiUrl,
  type PatchloopConfig,
  type WorkerDeployment,
  type WorkerTuning,
} from '../config/environment';
import { setHeapGrowingPercent } from './heap-growth';
import type { RunEndedSummary } from '../common';
import { ChunkHub } from '../streaming/chunk-hub';
import { RedisChunkTransport } from '../streaming/redis-transport';
import { startStreamServer } from '../streaming/stream-server';
import { StreamTokens } from '../streaming/stream-token';
import { ConfigurationError } from '../runtime';
import { queuePeers, servedFingerprint, sharedQueueNote, sharedQueueWarning, workerIdentity } from './task-queue-peers';

/**
 * Worker Versioning: the worker polls as this version of its deployment. Every workflow is pinned to the
 * version it started on (`agentRun` and `llmFunction` finish there); a run chain and a session move to
 * the current version at a continue-as-new after the server says the target changed.
 */
function deploymentOptions(deployment: WorkerDeployment | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!deployment) return {};
  return {
    workerDeploymentOptions: {
      version: { deploymentName: deployment.name, buildId: deployment.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

export interface PatchloopWorkerOptions {
  /** Worker Versioning: this worker's deployment and build (default: `config.deployment`, from the environment). */
  deployment?: WorkerDeployment;
  /** Without one the worker connects as `config` says (address, namespace, TLS or API key) and closes it when it stops. */
  connection?: NativeConnection;
  config: PatchloopConfig;
  /** Defaults to the example agent `assistant` and its tools. */
  agents?: AgentDefinitionInput[];
  tools?: Tool[];
  /** Code checks agents name in their `guardrails` (`defineGuardrail`). */
  guardrails?: Guardrail[];
  /** Defaults to the example functions `summarize` and `classify_sentiment`. */
  functions?: LlmFunction[];
  /**
   * A prebuilt bundle (`bundleWorkflowCode({ ...workflowBundleOptions() })`, so runs share their schemas);
   * without it the worker bundles `src/workflows`.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Whether runs keep patchloop's search attributes current. By default the worker checks the namespace
   * and registers missing ones (false if it may not: runs then go without).
   */
  searchAttributes?: boolean;
  /**
   * Serve only tool batches on `config.taskQueue`: no workflows, no model calls. For tools routed there
   * (`defineTool({ taskQueue })` or an agent's `tool_task_queues`); at least one agent must route a tool
   * to the queue, or the worker refuses to start.
   */
  toolsOnly?: boolean;
  /** OpenTelemetry (`tracingFromEnvironment`): Temporal's plugin joins the worker's plugins. */
  tracing?: Tracing;
  /** Extra worker options, e.g. a short `stickyQueueScheduleToStartTimeout` in crash tests. */
  workerOptions?: Partial<WorkerOptions>;
}

/** The worker's provider, every agent's default; a profile or wire format that names none is refused. */
function workerProvider(config: PatchloopConfig): ProviderSettings {
  const choice = <T extends string>(name: string, value: string | undefined, choices: readonly T[]): T | undefined => {
    if (value === undefined) return undefined;
    if (!(choices as readonly string[]).includes(value))
      throw new ConfigurationError(`${name} must be one of ${choices.join(', ')}, not '${value}'`);
    return value as T;
  };
  const profile = choice('PATCHLOOP_PROVIDER_PROFILE', config.providerProfile, ProviderProfileName.options);
  const api = choice('PATCHLOOP_PROVIDER_API', config.providerApi, ProviderApi.options);
  return {
    baseURL: config.openaiBaseUrl,
    apiKey: config.openaiApiKey,
    ...(profile ? { profile } : {}),
    ...(api ? { api } : {}),
    timeoutMs: 10 * 60 * 1000,
  };
}

function withoutInterceptors(options: Partial<WorkerOptions> | undefined): Partial<WorkerOptions> {
  const { interceptors: _interceptors, ...rest } = options ?? {};
  return rest;
}

/** The workflows' entry file. */
export function workflowsPath(): string {
  return sourceFile('workflows', 'index');
}

/**
 * How the workflow bundle is built: every module preloaded, so the runs of a worker thread share one
 * instance of each (a cached run holds its own state only, not its own copy of patchloop's code).
 * Sound because no workflow module keeps state at module level (a unit test checks), and zod schemas,
 * which zod writes to, are shielded from the SDK's freeze of shared modules (`sharedSchema`).
 */
export function workflowBundleOptions(): { workflowsPath: string; preloadModules: string[] } {
  // Stack traces in workflow code cost about half of a workflow thread's time (workflows/stack-traces.ts).
  const stackTraces = process.env['PATCHLOOP_WORKFLOW_STACK_TRACES'] === '1';
  return {
    workflowsPath: workflowsPath(),
    preloadModules: [
      ...(stackTraces ? [] : [sourceFile('workflows', 'stack-traces')]),
      sourceFile('workflows', 'shared-modules'),
      workflowsPath(),
    ],
  };
}

/**
 * Memory budgeted per cached run: over three times what a run of 4 small iterations holds (about
 * 0.3 MB with its model call in flight, 0.15 MB of it workflow state, `npm run bench:memory`; 2 MB
 * before runs shared their modules), since longer contexts hold more (about 15 KB an iteration).
 */
const CACHED_RUN_BYTES = 1024 * 1024;

/**
 * The worker's capacity: what the environment or the CLI set, and otherwise a cache bound derived from
 * the heap (half of it for cached runs), so a busy worker evicts runs instead of running out of memory.
 */
export function workerCapacity(tuning: WorkerTuning = {}): Partial<WorkerOptions> {
  const derived = Math.max(10, Math.floor((getHeapStatistics().heap_size_limit * 0.5) / CACHED_RUN_BYTES));
  return {
    maxCachedWorkflows: tuning.maxCachedWorkflows ?? derived,
    ...(tuning.maxConcurrentWorkflowTaskExecutions !== undefined
      ? { maxConcurrentWorkflowTaskExecutions: tuning.maxConcurrentWorkflowTaskExecutions }
      : {}),
    ...(tuning.maxConcurrentActivityTaskExecutions !== undefined
      ? { maxConcurrentActivityTaskExecutions: tuning.maxConcurrentActivityTaskExecutions }
      : {}),
  };
}

/**
 * The worker's workflow code: the bundle it was given, or one built in a child process (with the
 * workflow interceptors of the tracing plugin). Options that shape bundling in other ways (plugins,
 * bundler hooks) leave bundling to the SDK, in this process.
 */
async function workflowCode(options: PatchloopWorkerOptions): Promise<Partial<WorkerOptions>> {
  if (options.workflowBundle) return { workflowBundle: options.workflowBundle };
  const bundle = workflowBundleOptions();
  const custom = options.workerOptions;
  if (custom?.workflowBundle) return {};
  const converters = custom?.dataConverter?.payloadConverterPath ?? custom?.dataConverter?.failureConverterPath;
  if (
    custom?.plugins ||
    custom?.bundlerOptions ||
    custom?.workflowsPath ||
    custom?.interceptors?.workflowModules ||
    converters
  )
    return { workflowsPath: bundle.workflowsPath, bundlerOptions: { preloadModules: bundle.preloadModules } };
  return { workflowBundle: await buildWorkflowBundle(options.tracing) };
}

/**
 * The bundle a worker builds for itself, built in a child process (with the workflow interceptors of
 * the tracing plugin, when tracing is on): what `patchloop bundle` writes to a file.
 */
export async function buildWorkflowBundle(tracing?: Tracing): Promise<{ code: string }> {
  const bundle = workflowBundleOptions();
  const configured: BundleOptions = tracing?.plugin.configureBundler?.(bundle) ?? bundle;
  const started = Date.now();
  const { code } = await bundleInChildProcess({
    workflowsPath: configured.workflowsPath,
    preloadModules: bundle.preloadModules,
    ...(configured.workflowInterceptorModules
      ? { workflowInterceptorModules: configured.workflowInterceptorModules }
      : {}),
  });
  Runtime.instance().logger.info('workflow bundle built in a child process', {
    ms: Date.now() - started,
    bytes: code.length,
  });
  return { code };
}

/**
 * The worker's identity, which says what it serves, and what it says of other workers polling its task
 * queue for something else: a warning at start, and a note in the failure of a run of an agent it does
 * not serve (`task-queue-peers.ts`). Asking Temporal may fail (a namespace role without
 * DescribeTaskQueue): the worker then says nothing of it.
 */
function sharedTaskQueue(registry: AgentRegistry, options: PatchloopWorkerOptions, connection: NativeConnection) {
  const { config } = options;
  const identity =
    options.workerOptions?.identity ??
    workerIdentity({
      fingerprint: servedFingerprint(registry.definitions, registry.functionNames),
      folder: process.cwd(),
      agents: registry.agentNames,
    });
  const self = { taskQueue: config.taskQueue, identity };
  const peers = () =>
    queuePeers(connection, {
      namespace: options.workerOptions?.namespace ?? config.namespace,
      taskQueue: config.taskQueue,
      identity,
      deployment: options.deployment ?? config.deployment,
    });
  return {
    identity,
    note: async (agent: string) => sharedQueueNote(await peers(), self, agent),
    warnIfShared: async () => {
      const warning = sharedQueueWarning(await peers().catch(() => []), self);
      if (warning) Runtime.instance().logger.warn(warning);
    },
  };
}

/** A Temporal worker plus its token-stream endpoint; `run()` resolves after shutdown, with the endpoint closed. */
export interface PatchloopWorker {
  readonly temporal: Worker;
  readonly streamUrl: string;
  /** Whether runs keep patchloop's search attributes, and the ones this worker registered on start. */
  readonly searchAttributes: { available: boolean; registered: string[] };
  /** The capability a follower presents to read this run's chunks from this worker. */
  streamToken(runId: string): string;
  run(): Promise<void>;
  shutdown(): void;
}

export async function createPatchloopWorker(options: PatchloopWorkerOptions): Promise<PatchloopWorker> {
  const { config } = options;
  const registry = servedRegistry(options);
  // Before anything listens: a bundle that fails leaves nothing open behind it.
  const workflows = options.toolsOnly ? {} : await workflowCode(options);
  const connection = options.connection ?? (await NativeConnection.connect(connectionOptions(config)));
  const closeConnection = async () => {
    if (!options.connection) await connection.close();
  };
  const searchAttributes = await searchAttributesOf(options, connection).catch(closingFirst([closeConnection]));
  const redactor = workerRedactor(config, registry.definitions);
  const streams = await tokenStreams(config, closeConnection);
  const taskQueue = sharedTaskQueue(registry, options, connection);
  // Stdio MCP servers are the worker's child processes: they stop with it.
  const mcp = new McpServers();
  const activities = createActivities({
    mcp,
    registry,
    defaultModel: config.model,
    modelWindows: config.modelWindows,
    provider: workerProvider(config),
    chunks: { transport: streams.transport, url: streams.server.url, tokens: streams.tokens },
    redactor,
    payloadsByReference: config.payloadStorage.kind !== 'off',
    ...(config.payloadStorage.kind !== 'off' ? { payloadThresholdBytes: config.payloadStorage.thresholdBytes } : {}),
    searchAttributes: searchAttributes.now,
    sharedQueue: taskQueue.note,
    forkReplay: () =>
      options.toolsOnly
        ? undefined
        : {
            // A bundle given in the SDK's own options is the code the runs run, too.
            workflows: options.workerOptions?.workflowBundle
              ? { workflowBundle: options.workerOptions.workflowBundle }
              : workflows,
            dataConverter: patchloopDataConverter(config.payloadStorage, config.encryption),
            payloadsByReference: config.payloadStorage.kind !== 'off',
          },
    notifyLinks: (workflowId) => {
      const page = consoleRunUrl(workflowId);
      const ui = workflowUiUrl(config, workflowId);
      return { ...(page ? { console: page } : {}), ...(ui ? { temporal_ui: ui } : {}) };
    },
  });
  // Before the workflow threads start, though V8 reads it at every collection anyway.
  const growing = config.workerTuning?.heapGrowingPercent;
  if (growing !== undefined) setHeapGrowingPercent(growing);
  const closeAll = [() => streams.server.close(), streams.closeTransport, () => mcp.close(), closeConnection];
  const worker = await Worker.create(
    temporalWorkerOptions(options, {
      connection,
      identity: taskQueue.identity,
      workflows,
      activities: options.toolsOnly ? { toolBatch: activities.toolBatch } : activities,
      redactor,
    }),
  ).catch(closingFirst(closeAll));
  if (!options.toolsOnly) await taskQueue.warnIfShared();
  return {
    temporal: worker,
    streamUrl: streams.server.url,
    searchAttributes: searchAttributes.found,
    streamToken: (runId) => streams.tokens.tokenFor(runId),
    run: async () => {
      try {
        await worker.run();
      } finally {
        await closeInOrder(closeAll);
      }
    },
    shutdown: () => worker.shutdown(),
  };
}

/** The agents, tools and functions the worker serves, checked: provider keys, and a tools-only worker's queue. */
function servedRegistry(options: PatchloopWorkerOptions): AgentRegistry {
  const registry = new AgentRegistry(
    options.tools ?? exampleTools,
    options.agents ?? [assistantAgent],
    options.functions ?? exampleFunctions,
    options.guardrails ?? [],
  );
  const missingKeys = options.toolsOnly ? [] : missingProviderKeys(registry.definitions, process.env);
  if (missingKeys.length > 0) throw new ConfigurationError(missingKeys.join('; '));
  // MCP tools count too: this worker runs their calls with its own connections to the agents' servers.
  if (options.toolsOnly && registry.routedTo(options.config.taskQueue).length === 0)
    throw new ConfigurationError(
      `no agent routes a tool to task queue '${options.config.taskQueue}': name it in defineTool({ taskQueue }) or an agent's tool_task_queues`,
    );
  return registry;
}

/**
 * Whether runs keep patchloop's search attributes (`found`, with the ones registered now), and the
 * answer a run gets when it resolves its agent (`now`): checked again at most once a minute, since a
 * dev server restarted in memory, or an attribute removed, must not leave runs upserting attributes
 * that no longer exist.
 */
async function searchAttributesOf(options: PatchloopWorkerOptions, connection: NativeConnection) {
  const namespace = options.workerOptions?.namespace ?? options.config.namespace;
  // At the start, it waits until the server uses them; a later check runs inside a short local activity.
  const check = (usableWithinMs?: number) =>
    ensureSearchAttributes(connection, namespace, Runtime.instance().logger, usableWithinMs);
  const found =
    options.searchAttributes !== undefined || options.toolsOnly
      ? { available: options.searchAttributes ?? false, registered: [] }
      : await check();
  let lastCheck = { at: Date.now(), available: found.available };
  const now = async (): Promise<boolean> => {
    if (options.searchAttributes !== undefined) return options.searchAttributes;
    if (Date.now() - lastCheck.at > 60_000) lastCheck = { at: Date.now(), available: (await check(0)).available };
    return lastCheck.available;
  };
  return { found, now };
}

/**
 * Where the worker's token chunks go (Redis Streams, or the worker's own hub) and the endpoint followers
 * read them from; what a failed start opened is closed, the connection too.
 */
async function tokenStreams(config: PatchloopConfig, closeConnection: () => Promise<void>) {
  const transport = config.redis
    ? new RedisChunkTransport(config.redis, { encryption: config.encryption, logger: Runtime.instance().logger })
    : new ChunkHub();
  if (transport instanceof RedisChunkTransport)
    await transport.connected().catch(closingFirst([() => transport.close(), closeConnection]));
  const closeTransport = async () => {
    if (transport instanceof RedisChunkTransport) await transport.close();
  };
  const tokens = new StreamTokens(config.streamSecret);
  const server = await startStreamServer(transport, {
    port: config.streamPort,
    host: config.streamHost,
    tokens,
    ...(config.streamUrl ? { advertiseUrl: config.streamUrl } : {}),
  }).catch(closingFirst([closeTransport, closeConnection]));
  return { transport, tokens, server, closeTransport };
}

/** What the Temporal worker is made of besides the options: its parts, opened by `createPatchloopWorker`. */
interface WorkerParts {
  connection: NativeConnection;
  identity: string;
  workflows: Partial<WorkerOptions>;
  activities: object;
  redactor: SecretRedactor;
}

function temporalWorkerOptions(options: PatchloopWorkerOptions, parts: WorkerParts): WorkerOptions {
  const { config } = options;
  return {
    connection: parts.connection,
    namespace: config.namespace,
    // Payloads over the threshold go by reference; the worker's own client (activities' queries) too.
    dataConverter: patchloopDataConverter(config.payloadStorage, config.encryption),
    taskQueue: config.taskQueue,
    identity: parts.identity,
    ...parts.workflows,
    activities: parts.activities,
    interceptors: {
      ...options.workerOptions?.interceptors,
      activity: [redactionInterceptor(parts.redactor), ...(options.workerOptions?.interceptors?.activity ?? [])],
    },
    // Cancels reach an activity only through heartbeat answers, and a tool batch's checkpoint of a call
    // that just finished must reach the server before a crash can lose it: the SDK sends a heartbeat at
    // most this long after it is made (activities heartbeat on their own once a second besides).
    maxHeartbeatThrottleInterval: '250ms',
    defaultHeartbeatThrottleInterval: '250ms',
    sinks: {
      patchloop: {
        runEnded: {
          fn: (info, { status, llmCalls, toolCalls }: RunEndedSummary) =>
            Runtime.instance().logger.debug('run ended', { workflowId: info.workflowId, status, llmCalls, toolCalls }),
        },
        abortRequested: { fn: (info) => nudgeAfterAbort(info.workflowId) },
      },
    },
    ...(config.stickyQueueTimeout ? { stickyQueueScheduleToStartTimeout: config.stickyQueueTimeout } : {}),
    ...deploymentOptions(options.deployment ?? config.deployment),
    ...workerCapacity(config.workerTuning),
    ...(options.tracing ? { plugins: [options.tracing.plugin] } : {}),
    ...withoutInterceptors(options.workerOptions),
  };
}

/** Closes each in turn (what a worker opened, in the order it lets go of it). */
async function closeInOrder(closers: ReadonlyArray<() => Promise<void>>): Promise<void> {
  for (const close of closers) await close();
}

/** A start that failed: what was opened before it is closed, then the error goes on. */
function closingFirst(closers: ReadonlyArray<() => Promise<void>>): (error: unknown) => Promise<never> {
  return async (error) => {
    await closeInOrder(closers);
    throw error;
  };
}
