/**
 * `npm run bench:compile`: compile time per turn in patchloop and in the reference (SimpleLLMFunc
 * 0.8.4) on the same inputs, measured side by side in one run.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { compileInvocationTurn } from '../src/context';
import { benchmarkContract, benchmarkMutations, benchmarkSnapshot, benchmarkTranscript } from './compile-inputs';
import { median, table } from './report';

const SIZES = [100, 1_000, 10_000];
const PENDING = [1, 10, 100];
const root = join(__dirname, '..');

interface Row {
  mode: 'plain' | 'selfref';
  messages: number;
  pending: number;
}

const rows: Row[] = [];
for (const mode of ['plain', 'selfref'] as const)
  for (const messages of SIZES) for (const pending of PENDING) rows.push({ mode, messages, pending });

function inputs(row: Row) {
  return {
    transcript: benchmarkTranscript(row.messages),
    mutations: benchmarkMutations(row.pending, row.mode === 'selfref'),
    prompt_contract: benchmarkContract,
    selfref_snapshot: row.mode === 'selfref' ? benchmarkSnapshot() : null,
  };
}

function timePatchloop(row: Row): number {
  const input = inputs(row);
  const compile = () =>
    compileInvocationTurn(input.prompt_contract, input.transcript, input.mutations, input.selfref_snapshot);
  for (let warm = 0; warm < 3; warm += 1) compile();
  const samples: number[] = [];
  const started = performance.now();
  while (samples.length < 5 || (performance.now() - started < 400 && samples.length < 500)) {
    const t0 = performance.now();
    compile();
    samples.push(performance.now() - t0);
  }
  return median(samples);
}

function timeReference(): number[] {
  const python = join(root, '.venv', 'bin', 'python');
  const result = spawnSync(python, [join(root, 'tools', 'reference', 'bench.py')], {
    input: JSON.stringify(rows.map(inputs)),
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (result.status !== 0)
    throw new Error(`reference benchmark failed: ${result.stderr || result.error}. Run "bash scripts/setup.sh" first.`);
  return JSON.parse(result.stdout) as number[];
}

// One untimed pass first, so the first rows do not pay for JIT warm-up.
rows.forEach(timePatchloop);
const ours = rows.map(timePatchloop);
const theirs = timeReference();
const ms = (value: number) => value.toFixed(value < 1 ? 3 : 2);

console.log('Compile one turn (compile_invocation_turn), median ms per compile; both measured in this run.\n');
console.log(
  table(
    ['mode', 'messages', 'pending', 'patchloop ms', 'reference ms', 'reference/patchloop'],
    rows.map((row, index) => [
      row.mode,
      String(row.messages),
      String(row.pending),
      ms(ours[index]!),
      ms(theirs[index]!),
      `${(theirs[index]! / ours[index]!).toFixed(1)}x`,
    ]),
  ),
);

console.log('\nGrowth from 1,000 to 10,000 messages (target: at most ~12x for linear work)\n');
console.log(
  table(
    ['mode', 'pending', 'patchloop growth', 'reference growth'],
    (['plain', 'selfref'] as const).flatMap((mode) =>
      PENDING.map((pending) => {
        const at = (size: number) =>
          rows.findIndex((row) => row.mode === mode && row.pending === pending && row.messages === size);
        return [
          mode,
          String(pending),
          `${(ours[at(10_000)]! / ours[at(1_000)]!).toFixed(1)}x`,
          `${(theirs[at(10_000)]! / theirs[at(1_000)]!).toFixed(1)}x`,
        ];
      }),
    ),
  ),
);

const largest = Math.max(...rows.flatMap((row, index) => (row.messages === 10_000 ? [ours[index]!] : [])));
const slowestRatio = Math.min(...ours.map((value, index) => theirs[index]! / value));
console.log(`\nslowest 10,000-message compile: ${ms(largest)} ms (target: well under 50 ms)`);
console.log(`smallest reference/patchloop ratio: ${slowestRatio.toFixed(1)}x (target: at least 10x)`);
