import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { builtinModules } from 'node:module';

// Code that workflows import must stay deterministic and bundle into the workflow sandbox:
// no Node built-ins, no I/O clients, no clock, no randomness.
// Failure types come from one catalogue (src/common/failure-types.ts): no failure built from a loose
// string, no retry policy naming one.
const failureRestrictions = [
  {
    selector:
      "CallExpression[callee.object.name='ApplicationFailure'][callee.property.name=/^(create|nonRetryable|retryable)$/]",
    message: 'Build failures with failure(FailureType.X, ...) (or carriedFailure) from src/common/failure-types.ts.',
  },
  {
    selector: "Property[key.name='nonRetryableErrorTypes'] > ArrayExpression > Literal",
    message: 'Name failure types as FailureType.X from src/common/failure-types.ts.',
  },
];
// Every rule of no-restricted-syntax for src/ (a block that sets the rule replaces its list: each
// block of src/ names these). Barrels name what they export: an import then says where a name lives.
const exportAllRestriction = {
  selector: 'ExportAllDeclaration',
  message: "Export names explicitly (export { A, type B } from './a'), never with export *.",
};
const sourceRestrictions = [...failureRestrictions, exportAllRestriction];
const nodeBuiltins = builtinModules.flatMap((name) => [name, `node:${name}`]);
const pureRestrictions = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: [
        ...nodeBuiltins.map((name) => ({ name, message: 'Pure/workflow code must not use Node built-ins.' })),
        { name: 'openai', message: 'Provider calls belong in activities.', allowTypeImports: true },
        {
          name: '@temporalio/activity',
          message: 'Workflow code must not import activity APIs.',
          allowTypeImports: true,
        },
        { name: '@temporalio/client', message: 'Workflow code must not import the client.', allowTypeImports: true },
        { name: '@temporalio/worker', message: 'Workflow code must not import the worker.', allowTypeImports: true },
      ],
      patterns: [
        {
          group: ['**/activities', '**/activities/**'],
          message: 'Import activities as types only.',
          allowTypeImports: true,
        },
        {
          group: ['**/client', '**/client/**', '**/worker', '**/worker/**'],
          message: 'Not allowed in pure code.',
          allowTypeImports: true,
        },
      ],
    },
  ],
  'no-restricted-globals': [
    'error',
    ...[
      'process',
      'Buffer',
      'setInterval',
      'structuredClone',
      'fetch',
      'require',
      'crypto',
      'performance',
      'queueMicrotask',
    ].map((name) => ({ name, message: `${name} is not available (or not deterministic) in the workflow sandbox.` })),
  ],
  'no-restricted-properties': [
    'error',
    { object: 'Math', property: 'random', message: 'No randomness in pure code: pass values in.' },
    { object: 'Date', property: 'now', message: 'No clock in pure code: pass time in.' },
  ],
  'no-restricted-syntax': [
    'error',
    { selector: "NewExpression[callee.name='Date']", message: 'No clock in pure code.' },
    ...sourceRestrictions,
  ],
};

/**
 * The layers of src/ (ARCHITECTURE.md): each may import the layers listed and nothing else of ours.
 * Anything else is an import against the layers, reported by import-x/no-restricted-paths.
 */
const layers = {
  context: [],
  runtime: ['context'],
  common: ['runtime', 'context'],
  workflows: ['common', 'runtime', 'context'],
  tools: ['runtime', 'context'],
  functions: ['runtime', 'context'],
  agents: ['tools', 'functions', 'common', 'runtime', 'context'],
  streaming: ['storage', 'config', 'runtime', 'context'],
  'fake-model': [],
  config: [],
  a2a: ['runtime', 'context'],
  storage: ['config', 'common', 'runtime', 'context'],
  activities: ['a2a', 'agents', 'tools', 'functions', 'streaming', 'common', 'runtime', 'context'],
  client: ['functions', 'streaming', 'storage', 'config', 'common', 'runtime', 'context'],
  console: ['client', 'config', 'runtime', 'context'],
  gateway: ['a2a', 'client', 'config', 'common', 'runtime', 'context'],
  worker: [
    'a2a',
    'activities',
    'agents',
    'tools',
    'functions',
    'streaming',
    'storage',
    'config',
    'common',
    'runtime',
    'context',
  ],
  cli: [
    'console',
    'gateway',
    'a2a',
    'client',
    'worker',
    'fake-model',
    'agents',
    'tools',
    'functions',
    'streaming',
    'storage',
    'config',
    'common',
    'runtime',
    'context',
  ],
};
const layerZones = Object.entries(layers).flatMap(([layer, allowed]) =>
  Object.keys(layers)
    .filter((other) => other !== layer && !allowed.includes(other))
    .map((other) => ({
      target: `./src/${layer}`,
      from: `./src/${other}`,
      // Workflows name their activities' type (proxyActivities<Activities>); the purity rules below
      // allow that import as a type only.
      ...(layer === 'workflows' && other === 'activities' ? { except: ['./index.ts'] } : {}),
      message: `${layer} may import only ${allowed.length > 0 ? allowed.join(', ') : 'nothing of ours'} (see ARCHITECTURE.md).`,
    })),
);

/**
 * What the tests, the benchmarks and the scripts share lives in support/ (or in src/testing.ts when users
 * need it too): benchmarks, scripts and that shared code never reach into test/.
 */
const testZones = ['./bench', './scripts', './support'].map((target) => ({
  target,
  from: './test',
  message: 'Only tests import test/: move what is shared to support/ (or src/testing.ts).',
}));

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'scratch/**',
      'node_modules/**',
      '**/.venv/**',
      '**/.venv-py/**',
      '.patchloop/**',
      'coverage/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    plugins: { 'import-x': importX },
    // Probe files of the lint tests are not in tsconfig: they get a default project.
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['src/*/probe.ts', 'test/*/probe.ts'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // An un-awaited promise that rejects is an unhandled rejection: one such bug stopped a worker.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones: [...layerZones, ...testZones] }],
      // Beyond five, an options object: a call then names what it passes.
      '@typescript-eslint/max-params': ['error', { max: 5 }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', ...sourceRestrictions] },
  },
  // The catalogue itself, and the redactor, which copies failures.
  {
    files: ['src/common/failure-types.ts', 'src/activities/redact.ts'],
    rules: { 'no-restricted-syntax': ['error', exportAllRestriction] },
  },
  // node:test's test() returns a promise its runner owns (awaiting it at top level would run the
  // file's after() hooks early).
  { files: ['examples/**/*.test.ts'], rules: { '@typescript-eslint/no-floating-promises': 'off' } },
  // Tests use Python's line-boundary control characters on purpose; a Vitest fixture that needs no
  // other fixture says so with an empty pattern, `({}, ...)` (Vitest reads the first parameter's names).
  {
    files: ['test/**/*.ts'],
    rules: { 'no-control-regex': 'off', 'no-empty-pattern': ['error', { allowObjectPatternsAsParameters: true }] },
  },
  { files: ['src/context/**/*.ts', 'src/runtime/**/*.ts'], rules: pureRestrictions },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      ...pureRestrictions,
      // Workflows may read Date.now(): the sandbox makes it the deterministic task time.
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Use uuid4() from @temporalio/workflow.' },
      ],
      'no-restricted-syntax': ['error', ...sourceRestrictions],
    },
  },
  // A function of the workflows, the activities or the worker reads in one screen: beyond, it is split
  // into named steps (tables of declarations aside, which this counts too: none is longer today).
  {
    files: ['src/workflows/**/*.ts', 'src/activities/**/*.ts', 'src/worker/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: false, skipComments: false }] },
  },
  // The console's browser script.
  {
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['document', 'window', 'location', 'fetch', 'EventSource', 'FormData', 'setInterval', 'console'].map((name) => [
          name,
          'readonly',
        ]),
      ),
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.{js,mjs,cjs}', 'test/**/*.cjs', 'bench/peers/**/*.mjs'],
    languageOptions: {
      globals: {
        fetch: 'readonly',
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
