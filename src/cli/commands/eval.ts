import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import { evaluate, type Candidate, type EvaluationReport } from '../../client/evaluation';
import type { PatchloopClient } from '../../client/patchloop-client';
import { EvalDataset } from '../../runtime';
import { countOption, parseCommand } from '../arguments';
import { EXIT, UsageError, WithStatus } from '../errors';
import { candidateName, junitXml } from '../junit';
import { EVAL_SYNTAX } from '../syntax';
import { printTable } from '../table';
type Print = (line: string) => void;

/**
 * `patchloop eval <dataset> (--agent A [--model M] | --compare A B)`: every case a real run on a worker,
 * a table of the results (two candidates side by side with `--compare`), the report as JSON and JUnit
 * XML when asked; exit 1 when a case failed (docs/fork-and-evals.md).
 */
export async function evalCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values, positionals } = parseCommand(args, EVAL_SYNTAX);
  const file = positionals['dataset']!;
  const dataset = readDataset(file);
  const candidates = candidatesOf(values, positionals['other']);
  const concurrency = countOption(values.concurrency, 'concurrency', 4, EVAL_SYNTAX.usage);
  const total = dataset.cases.length * candidates.length;
  let done = 0;
  const progress = (): void => {
    done += 1;
    if (process.stderr.isTTY) {
      const filled = Math.round((done / total) * 30);
      process.stderr.write(
        `\r[${'#'.repeat(filled)}${' '.repeat(30 - filled)}] ${done}/${total}${done === total ? '\n' : ''}`,
      );
    } else process.stderr.write(`case ${done}/${total}\n`);
  };
  const reports: EvaluationReport[] = [];
  for (const candidate of candidates)
    reports.push(await evaluate(client, dataset, candidate, { concurrency, onCase: progress }));
  printReports(reports, print);
  if (values.json) writeFileSync(values.json, `${JSON.stringify({ dataset: file, reports }, null, 2)}\n`);
  if (values.junit) writeFileSync(values.junit, junitXml(file, reports));
  const failed = reports.some((report) => report.failed > 0);
  return new WithStatus(undefined, failed ? EXIT.failed : EXIT.done);
}

/** A dataset file, JSON or YAML (by its name), checked: a bad one is a usage error naming the problem. */
function readDataset(file: string): EvalDataset {
  let raw: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    raw = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new UsageError(`cannot read the dataset ${file}: ${(error as Error).message}`);
  }
  const parsed = EvalDataset.safeParse(raw);
  if (!parsed.success) throw new UsageError(`the dataset ${file} is not valid:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function candidatesOf(
  values: { agent?: string | undefined; model?: string | undefined; compare?: string | undefined },
  other: string | undefined,
): Candidate[] {
  if (values.compare !== undefined) {
    if (other === undefined || values.agent !== undefined)
      throw new UsageError(`--compare takes two agents and no --agent\nusage: ${EVAL_SYNTAX.usage}`);
    const model = values.model !== undefined ? { model: values.model } : {};
    return [
      { agent: values.compare, ...model },
      { agent: other, ...model },
    ];
  }
  if (values.agent === undefined || other !== undefined)
    throw new UsageError(`name the candidate: --agent A (or --compare A B)\nusage: ${EVAL_SYNTAX.usage}`);
  return [{ agent: values.agent, ...(values.model !== undefined ? { model: values.model } : {}) }];
}

/** One table: a row per case (each candidate's verdict and tokens), then the totals and, for two, the deltas. */
function printReports(reports: readonly EvaluationReport[], print: Print): void {
  const header = ['case', ...reports.flatMap((report) => [candidateName(report), 'tokens'])];
  const rows = reports[0]!.cases.map((result, index) => [
    result.name,
    ...reports.flatMap((report) => {
      const own = report.cases[index]!;
      const failed = own.checks.filter((check) => !check.passed).map((check) => check.check);
      return [own.passed ? 'pass' : `FAIL (${failed.join(', ')})`, String(own.total_tokens)];
    }),
  ]);
  const totals = [
    'score',
    ...reports.flatMap((report) => [
      `${report.passed}/${report.cases.length} (${Math.round(report.score * 100)}%)`,
      String(report.total_tokens),
    ]),
  ];
  printTable([header, ...rows, totals], print);
  for (const report of reports)
    if (report.cost_usd !== null) print(`cost of ${candidateName(report)}: $${report.cost_usd.toFixed(6)}`);
  if (reports.length === 2) {
    const [first, second] = reports as [EvaluationReport, EvaluationReport];
    const points = Math.round((second.score - first.score) * 100);
    const cost =
      first.cost_usd !== null && second.cost_usd !== null
        ? `, cost ${signed(second.cost_usd - first.cost_usd, 6)} USD`
        : '';
    print(
      `${candidateName(second)} against ${candidateName(first)}: score ${points >= 0 ? '+' : ''}${points} points, tokens ${signed(second.total_tokens - first.total_tokens, 0)}${cost}`,
    );
  }
}

function signed(value: number, digits: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
}
