import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { AgentDefinition, agentModel, isConfigurationError, type AgentDefinitionInput } from '../../runtime';
import { CliErrorType } from '../../common/cli-error-types';
import {
  configFromEnvironment,
  withOfflineModel,
  connectionOptions,
  workerSettingsFromEnvironment,
  type PatchloopConfig,
  type WorkerProcessSettings,
} from '../../config/environment';
import { createPatchloopWorker, workerCapacity, workerRedactor } from '../../worker/create-worker';
import { readBundleFile } from '../../worker/bundle-file';
import { WORKER_HEAP_GROWING_PERCENT } from '../../worker/heap-growth';
import { RedactingLogger } from '../../worker/redaction';
import { FORWARDED_CORE_LOGS, WorkerLog } from '../../worker/worker-log';
import { tracingConfigured, tracingFromEnvironment } from '../../worker/tracing';
import { demoModel } from '../../fake-model/demo-model';
import { FakeModelServer } from '../../fake-model/server';
import { ScriptedModel } from '../../fake-model/scripted-model';
import { modelScriptsFrom, type ModelScript } from '../../fake-model/script';
import { exampleTools } from '../../tools/examples';
import type { Guardrail } from '../../tools/define-guardrail';
import type { Tool } from '../../tools/define-tool';
import { prometheusTelemetry, startHeapGauges } from '../../worker/metrics';
import { CliError, temporalUnreachable } from '../errors';
import { parseCommand } from '../arguments';
import { agentsFromFile } from '../agents-file';
import { onParentExit } from '../parent-exit';
import { exportNamed, importUserModule } from '../user-module';
import { WORKER_SYNTAX } from '../syntax';

/**
 * Runs a worker until SIGINT/SIGTERM, then shuts down gracefully (Temporal's runtime handles the
 * signals): running activities are cancelled as a shutdown, so their phases retry on another worker.
 * A second signal ends the process at once (the runtime stops handling them after the first). Started
 * through a package manager, the worker also stops when the manager's wrapper exits.
 */
export async function workerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, WORKER_SYNTAX);
  const setup = await workerSetup(values);
  const workerLog = installRuntime(setup, values.verbose === true);
  const { metricsAddress } = setup.settings;
  const stopHeapGauges = metricsAddress ? startHeapGauges(Runtime.instance().metricMeter) : undefined;
  const stopWatchingParent = process.env['npm_lifecycle_event'] ? stopWithWrapper(print) : undefined;
  const loaded = await loadTools(values.tools ?? []);
  const tools = [...exampleTools, ...loaded.tools];
  const bundle = await workflowBundleOf(setup);
  const connection = await connectWorker(setup.environment);
  workerLog.watchConnection(connection);
  const fakeModel = values['fake-model'];
  const fake = fakeModel === undefined ? undefined : await startFakeModel(fakeModel, print);
  const config = fake ? withOfflineModel(setup.environment, fake.url, fake.model) : setup.environment;
  const tracing = tracingFromEnvironment();
  try {
    const worker = await createPatchloopWorker({
      connection,
      config,
      agents: setup.agents,
      tools,
      guardrails: loaded.guardrails,
      toolsOnly: setup.toolsOnly,
      ...(bundle.workflowBundle ? { workflowBundle: bundle.workflowBundle } : {}),
      ...(tracing ? { tracing } : {}),
    }).catch(configurationError);
    if (worker.searchAttributes.registered.length > 0)
      print(
        `registered search attributes ${worker.searchAttributes.registered.join(', ')} on namespace ${config.namespace}`,
      );
    print(startLine(setup, { config, bundleNote: bundle.note, model: fake?.description }));
    await worker.run();
    print('worker stopped');
  } finally {
    stopWatchingParent?.();
    stopHeapGauges?.();
    await connection.close();
    await fake?.close();
    await tracing?.shutdown();
  }
  return undefined;
}

type WorkerValues = ReturnType<typeof parseCommand<(typeof WORKER_SYNTAX)['options']>>['values'];

/** What `patchloop worker` was asked for, checked before anything starts. */
interface WorkerSetup {
  /** The environment's settings with the flags' in place. */
  environment: PatchloopConfig;
  settings: WorkerProcessSettings;
  heapGrowingPercent: number;
  agents: AgentDefinitionInput[];
  definitions: AgentDefinition[];
  toolsOnly: boolean;
}

/** The settings (flags over their variables), the agents, and a provider unless the worker needs none. */
async function workerSetup(values: WorkerValues): Promise<WorkerSetup> {
  const base = configFromEnvironment();
  const settings = settingsOrUsageError(values);
  // This process is the worker's alone: its heaps grow less than V8's default lets them.
  const heapGrowingPercent = settings.tuning.heapGrowingPercent ?? WORKER_HEAP_GROWING_PERCENT;
  const environment = {
    ...base,
    deployment: settings.deployment,
    workerTuning: { ...settings.tuning, heapGrowingPercent },
    ...(values['task-queue'] ? { taskQueue: values['task-queue'] } : {}),
  };
  const toolsOnly = values['tools-only'] === true;
  if (toolsOnly && !values['task-queue'])
    throw new CliError('--tools-only needs --task-queue: the queue its tools are routed to', CliErrorType.UsageError);
  const agents = await agentsFromFile(values.agents);
  const definitions = agents.map((agent) => AgentDefinition.parse(agent));
  // Offline by choice, never by surprise: no provider and no --fake-model is an error, not api.openai.com.
  // Agents that all name their own server need none from the environment.
  const everyAgentHasServer = definitions.every((agent) => agent.provider?.base_url !== undefined);
  // --fake-model alone: the demo's model; --fake-model FILE: the model scripts in FILE.
  if (
    !toolsOnly &&
    values['fake-model'] === undefined &&
    !environment.openaiApiKey &&
    !environment.openaiBaseUrl &&
    !everyAgentHasServer
  )
    throw new CliError(
      "no model provider configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible provider), name a provider.base_url in every agent, or start 'npx patchloop worker --fake-model' for the offline scripted model the demo uses",
      CliErrorType.NoProvider,
    );
  return { environment, settings, heapGrowingPercent, agents, definitions, toolsOnly };
}

/**
 * The runtime's logger and telemetry. Worker log lines (activity failures among them) pass through the
 * same redaction as failures, the keys the agents' providers read among them. Quiet by default: one
 * line per problem (Core's lines included); INFO (webpack's bundle statistics among it) and whole
 * failures with --verbose.
 */
function installRuntime(setup: WorkerSetup, verbose: boolean): WorkerLog {
  const { environment, definitions } = setup;
  const { metricsAddress } = setup.settings;
  const workerLog = new WorkerLog(
    new RedactingLogger(new DefaultLogger(verbose ? 'INFO' : 'WARN'), workerRedactor(environment, definitions)),
    { address: environment.temporalAddress, verbose },
  );
  Runtime.install({
    logger: workerLog,
    telemetryOptions: {
      logging: FORWARDED_CORE_LOGS,
      ...(metricsAddress ? metricsOrUsageError(metricsAddress) : {}),
    },
  });
  return workerLog;
}

/**
 * The workflow code `--workflow-bundle` names, and what the start line says of it. A bundle without the
 * tracing plugin's workflow interceptors would silently lose the workflow spans: the worker then bundles
 * at start.
 */
async function workflowBundleOf(setup: WorkerSetup): Promise<{ workflowBundle?: { code: string }; note: string }> {
  const file = setup.toolsOnly ? undefined : setup.settings.workflowBundle;
  if (!file) return { note: '' };
  const loaded = await readBundleFile(file).catch(configurationError);
  if (loaded.identity.tracing || !tracingConfigured())
    return { workflowBundle: { code: loaded.code }, note: `workflows from ${file}; ` };
  return { note: `workflows bundled at start (${file} was built without tracing, which this worker has); ` };
}

/** The line a started worker prints: where it polls, what it serves, and how. */
function startLine(
  setup: WorkerSetup,
  { config, bundleNote, model }: { config: PatchloopConfig; bundleNote: string; model: string | undefined },
): string {
  const { deployment, metricsAddress, tuning } = setup.settings;
  const { heapGrowingPercent } = setup;
  return (
    `worker polling task queue '${config.taskQueue}' on ${config.temporalAddress} (namespace ${config.namespace}); ` +
    `agents: ${setup.agents.map((agent) => agent.name).join(', ')}; ` +
    (deployment
      ? `deployment '${deployment.name}' build '${deployment.buildId}' (runs pinned to their build; run chains and sessions move at continue-as-new); `
      : 'unversioned; ') +
    `caches up to ${String(workerCapacity(tuning).maxCachedWorkflows)} runs; ` +
    `heap growing ${heapGrowingPercent === 0 ? "at V8's own rate" : `${heapGrowingPercent}%`}; ` +
    bundleNote +
    (metricsAddress ? `metrics on http://${metricsAddress}/metrics; ` : '') +
    (setup.toolsOnly
      ? 'tools only (no workflows, no model calls)'
      : model !== undefined
        ? `model: ${model}`
        : providerNote(setup.definitions, config))
  );
}

/**
 * What the start line says of the model servers: the worker's (every agent's default), and the agents
 * that name their own; only theirs when every agent names one (the worker's is then used by none).
 */
function providerNote(definitions: readonly AgentDefinition[], config: PatchloopConfig): string {
  const own = definitions.filter((agent) => agent.provider?.base_url !== undefined);
  const listed = own
    .map((agent) => `${agent.name}: ${agent.provider!.base_url}, model ${agentModel(agent, config.model)}`)
    .join('; ');
  if (own.length > 0 && own.length === definitions.length) return `providers: each agent's own (${listed})`;
  const worker = `provider: ${config.openaiBaseUrl ?? 'api.openai.com'}, model ${config.model}`;
  return own.length > 0 ? `${worker}; agents with their own: ${listed}` : worker;
}

/**
 * A package manager (npx, npm run: they set npm_lifecycle_event) runs this process under its shell
 * (npm -> sh -c -> node), and a signal sent to the manager stops the manager only: npm passes SIGTERM
 * to its shell, which dies of it without passing it on (dash), and the worker, re-parented, would keep
 * polling. So the wrapper exiting stops the worker as the SIGTERM it did not forward would have:
 * emitted to the runtime's handler, as Node does for a real signal, and to nothing once a signal has
 * already started the shutdown (the runtime has removed its handler then). Only under a package
 * manager: a worker started in the background from a shell (`nohup patchloop worker &`) is re-parented
 * when that shell exits, and keeps running as it was asked to.
 */
function stopWithWrapper(print: (line: string) => void): () => void {
  return onParentExit(() => {
    if (process.emit('SIGTERM', 'SIGTERM')) print('the process that started this worker exited: stopping');
  });
}

/** A configuration the worker refuses (an agent's tools, routing, a bundle file) is the user's to fix: no stack. */
function configurationError(error: unknown): never {
  if (isConfigurationError(error)) throw new CliError(error.message, CliErrorType.BadConfiguration);
  throw error;
}

/** The Prometheus exporter's options, or a usage error naming the flag and its variable. */
function metricsOrUsageError(address: string) {
  try {
    return prometheusTelemetry(address);
  } catch (error) {
    throw new CliError(
      `--metrics-address (PATCHLOOP_METRICS_ADDRESS): ${(error as Error).message}`,
      CliErrorType.UsageError,
    );
  }
}

/** The worker's settings, or a usage error naming the flag and its variable. */
function settingsOrUsageError(values: WorkerValues): WorkerProcessSettings {
  try {
    return workerSettingsFromEnvironment(values);
  } catch (error) {
    throw new CliError((error as Error).message, CliErrorType.UsageError);
  }
}

/** The tools of each `--tools` module, in order, and the guardrails they export (`guardrails`). */
async function loadTools(files: string[]): Promise<{ tools: Tool[]; guardrails: Guardrail[] }> {
  const tools: Tool[] = [];
  const guardrails: Guardrail[] = [];
  for (const file of files) {
    const module = await toolsOf(file);
    tools.push(...module.tools);
    guardrails.push(...module.guardrails);
  }
  return { tools, guardrails };
}

/**
 * The tools a module exports as `tools` (or as its default export): an array of `defineTool` results;
 * beside them, optionally, `guardrails`: an array of `defineGuardrail` results.
 */
async function toolsOf(file: string): Promise<{ tools: Tool[]; guardrails: Guardrail[] }> {
  let loaded: Record<string, unknown>;
  try {
    loaded = await importUserModule(file);
  } catch (error) {
    throw new CliError(`cannot load tools from ${file}: ${(error as Error).message}`, CliErrorType.ToolsNotLoaded);
  }
  const tools = exportNamed(loaded, 'tools') ?? loaded['default'];
  // By shape, not class: the module may have its own copy of patchloop (its project's).
  const notTool = Array.isArray(tools) ? tools.findIndex((value) => !isTool(value)) : -1;
  if (!Array.isArray(tools) || notTool >= 0)
    throw new CliError(
      `${file} must export 'tools': an array of defineTool(...) results${notTool >= 0 ? ` (tools[${notTool}] is not one)` : ''}`,
      CliErrorType.ToolsNotLoaded,
    );
  const guardrails = exportNamed(loaded, 'guardrails') ?? [];
  const notGuardrail = Array.isArray(guardrails) ? guardrails.findIndex((value) => !isGuardrail(value)) : -1;
  if (!Array.isArray(guardrails) || notGuardrail >= 0)
    throw new CliError(
      `${file}: 'guardrails' must be an array of defineGuardrail(...) results${notGuardrail >= 0 ? ` (guardrails[${notGuardrail}] is not one)` : ''}`,
      CliErrorType.ToolsNotLoaded,
    );
  return { tools: tools as Tool[], guardrails: guardrails as Guardrail[] };
}

function isGuardrail(value: unknown): boolean {
  const guardrail = value as Partial<Guardrail> | null;
  return (
    typeof guardrail === 'object' &&
    guardrail !== null &&
    typeof guardrail.name === 'string' &&
    typeof guardrail.check === 'function' &&
    Array.isArray(guardrail.stages)
  );
}

function isTool(value: unknown): boolean {
  const tool = value as Partial<Tool> | null;
  return (
    typeof tool === 'object' &&
    tool !== null &&
    typeof tool.execute === 'function' &&
    typeof tool.descriptor?.name === 'string' &&
    typeof tool.parameters?.safeParse === 'function'
  );
}

/**
 * The offline model of `--fake-model`: the demo's (bare flag), or the scripts a file holds (JSON: an
 * array of steps, a script object or a list of them; a module: its `scripts`, `script` or default export).
 */
async function startFakeModel(
  file: string,
  print: (line: string) => void,
): Promise<{ url: string; model: string; description: string; close(): Promise<void> }> {
  if (file === '') {
    const demo = await FakeModelServer.start({ responder: demoModel });
    return {
      url: demo.url,
      model: 'patchloop-demo-model',
      description: 'the offline scripted demo model (--fake-model)',
      close: () => demo.close(),
    };
  }
  let scripts: ModelScript[];
  try {
    const value = file.endsWith('.json')
      ? JSON.parse(await readFile(file, 'utf8'))
      : await importUserModule(file).then(
          (loaded) => exportNamed(loaded, 'scripts') ?? exportNamed(loaded, 'script') ?? loaded['default'],
        );
    scripts = modelScriptsFrom(value, file);
  } catch (error) {
    throw new CliError(
      `cannot load the model script ${file}: ${(error as Error).message}`,
      CliErrorType.BadConfiguration,
    );
  }
  const scripted = await ScriptedModel.start(scripts, { onProblem: print });
  return {
    url: scripted.url,
    model: 'patchloop-scripted-model',
    description: `the model scripts in ${file} (${scripts.map((script) => `'${script.name}'`).join(', ')})`,
    close: () => scripted.close(),
  };
}

async function connectWorker(config: PatchloopConfig): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(connectionOptions(config));
  } catch (error) {
    throw temporalUnreachable(config.temporalAddress, error);
  }
}
