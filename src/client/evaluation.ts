import { randomUUID } from 'node:crypto';
import type { Message } from '../context';
import {
  checkCase,
  judgePrompt,
  NO_RECORDING,
  parseVerdict,
  recordedCalls,
  type CaseOutcome,
  type CheckResult,
  type EvalCase,
  type EvalDataset,
  type RunEvent,
  type ToolRecordings,
} from '../runtime';
import { RunFailedError, type PatchloopClient, type RunHandle } from './patchloop-client';

/** Who answers an evaluation's cases: an agent, with another model when given. */
export interface Candidate {
  agent: string;
  model?: string;
}

/** One case as it went: its run, what it came to and each check. */
interface CaseResult {
  name: string;
  run_id: string;
  status: string;
  answer: string | null;
  passed: boolean;
  checks: CheckResult[];
  tools: string[];
  llm_calls: number;
  total_tokens: number;
  /** What the run's budget counted in dollars (null when it counted none). */
  cost_usd: number | null;
  duration_ms: number;
  /** The judge's run, when the case has a judge. */
  judge_run_id?: string;
}

/** A candidate's evaluation: every case in the dataset's order, and the totals. */
export interface EvaluationReport {
  candidate: Candidate;
  cases: CaseResult[];
  passed: number;
  failed: number;
  /** Passed cases over all cases. */
  score: number;
  total_tokens: number;
  cost_usd: number | null;
}

export interface EvaluateOptions {
  /** Cases run at once (default 4). */
  concurrency?: number;
  /** Called as each case ends (a progress bar). */
  onCase?: (result: CaseResult, done: number, total: number) => void;
}

/**
 * Runs every case of a dataset as a real durable run of the candidate on a worker (at most
 * `concurrency` at once): a case with `input` starts a run, one `from_run` forks the recorded run at
 * its iteration; with `tools: recorded` the calls are answered from the recorded run's results. A
 * judge is one more run. Results come back in the dataset's order.
 */
export async function evaluate(
  client: PatchloopClient,
  dataset: EvalDataset,
  candidate: Candidate,
  options: EvaluateOptions = {},
): Promise<EvaluationReport> {
  const recordings = new Map<string, Promise<ToolRecordings['calls']>>();
  const recorded = (run: string) => {
    if (!recordings.has(run)) recordings.set(run, recordedTranscript(client.run(run)).then(recordedCalls));
    return recordings.get(run)!;
  };
  const results: CaseResult[] = new Array<CaseResult>(dataset.cases.length);
  let next = 0;
  let done = 0;
  const lane = async () => {
    for (let index = next++; index < dataset.cases.length; index = next++) {
      const testCase = dataset.cases[index]!;
      const started = Date.now();
      // A case that cannot run (its recorded run unreadable, a start refused) fails alone.
      results[index] = await runCase(client, dataset, testCase, candidate, recorded).catch((error: unknown) =>
        failedCase(testCase, '', started, error instanceof Error ? error.message : String(error)),
      );
      done += 1;
      options.onCase?.(results[index]!, done, dataset.cases.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, lane));
  return report(candidate, results);
}

/** A recorded run's whole transcript, once it has ended: its result's, or (left out of it) the query's. */
async function recordedTranscript(run: RunHandle): Promise<Message[]> {
  const result = await run.result();
  return result.transcript_omitted ? run.transcript() : result.transcript;
}

function report(candidate: Candidate, cases: CaseResult[]): EvaluationReport {
  const passed = cases.filter((result) => result.passed).length;
  const costs = cases.map((result) => result.cost_usd).filter((cost): cost is number => cost !== null);
  return {
    candidate,
    cases,
    passed,
    failed: cases.length - passed,
    score: passed / cases.length,
    total_tokens: cases.reduce((sum, result) => sum + result.total_tokens, 0),
    cost_usd: costs.length > 0 ? costs.reduce((sum, cost) => sum + cost, 0) : null,
  };
}

async function runCase(
  client: PatchloopClient,
  dataset: EvalDataset,
  testCase: EvalCase,
  candidate: Candidate,
  recorded: (run: string) => Promise<ToolRecordings['calls']>,
): Promise<CaseResult> {
  const started = Date.now();
  const id = `eval-${randomUUID()}`;
  const source = testCase.recorded_run ?? testCase.from_run?.run;
  if (dataset.tools === 'recorded' && !source)
    return failedCase(testCase, id, started, 'tools: recorded needs the case to name from_run or recorded_run');
  const toolRecordings =
    dataset.tools === 'recorded' && source
      ? { from_run: source, calls: await recorded(source), fallthrough: dataset.fallthrough }
      : undefined;
  let run: RunHandle;
  try {
    run = testCase.from_run
      ? await client.fork(testCase.from_run.run, {
          at: testCase.from_run.at,
          agent: candidate.agent,
          ...(candidate.model ? { model: candidate.model } : {}),
          workflowId: id,
          ...(toolRecordings ? { toolRecordings } : {}),
        })
      : await client.start(
          {
            agent: candidate.agent,
            input: testCase.input!,
            ...(candidate.model ? { model: candidate.model } : {}),
            ...(toolRecordings ? { tool_recordings: toolRecordings } : {}),
          },
          { workflowId: id },
        );
  } catch (error) {
    return failedCase(testCase, id, started, (error as Error).message);
  }
  const outcome = await outcomeOf(client, run, testCase);
  const checks = checkCase(testCase.expect, outcome.outcome);
  return {
    name: testCase.name,
    run_id: id,
    status: outcome.outcome.status,
    answer: outcome.outcome.answer,
    passed: checks.every((result) => result.passed),
    checks,
    tools: outcome.outcome.tools,
    llm_calls: outcome.outcome.llm_calls,
    total_tokens: outcome.outcome.total_tokens,
    cost_usd: outcome.cost,
    duration_ms: Date.now() - started,
    ...(outcome.judgeRun ? { judge_run_id: outcome.judgeRun } : {}),
  };
}

/** What the case's run came to: its result, its own tool calls from its events, and the judge's verdict. */
async function outcomeOf(
  client: PatchloopClient,
  run: RunHandle,
  testCase: EvalCase,
): Promise<{ outcome: CaseOutcome; cost: number | null; judgeRun?: string }> {
  const result = await run.result().catch((error: unknown) => {
    if (error instanceof RunFailedError) return { failed: `${error.type}: ${error.message}` };
    throw error;
  });
  const { events } = await run.allEvents();
  const status = await run.status();
  const ended = 'failed' in result ? null : result;
  const outcome: CaseOutcome = {
    status: ended ? ended.status : `failed (${(result as { failed: string }).failed})`,
    answer: ended?.answer ?? null,
    tools: events.flatMap((event) => (event.event_type === 'tool_call_start' ? [event.tool_name] : [])),
    llm_calls: status.llm_calls,
    total_tokens: ended?.usage?.total_tokens ?? status.usage?.total_tokens ?? 0,
    unrecorded: unrecordedCalls(events),
  };
  const judge = testCase.expect.judge;
  if (!judge || !ended) return { outcome, cost: costOf(ended) };
  // A fork's task: the last thing its user asked in the conversation it goes on with.
  const task = testCase.input ?? lastUserMessage(ended.transcript);
  const judging = await client.start(
    { agent: judge.agent, input: judgePrompt(judge.rubric, task, ended.answer ?? '') },
    { workflowId: `${run.workflowId}-judge` },
  );
  const verdict = await judging.result().then(
    (answer) => parseVerdict(answer.answer),
    (error: Error) => ({ problem: `the judge's run failed: ${error.message}` }),
  );
  return { outcome: { ...outcome, judge: verdict }, cost: costOf(ended), judgeRun: judging.workflowId };
}

/** What the run's budget counted in dollars; null when it counted none (no budget, or a model without prices). */
function costOf(result: { budget?: { spent: Record<string, number> } } | null): number | null {
  const cost = result?.budget?.spent['max_cost_usd'];
  return cost ? cost : null;
}

/** Calls the run answered with no recording (recorded tools without fallthrough). */
function unrecordedCalls(events: RunEvent[]): string[] {
  return events.flatMap((event) =>
    event.event_type === 'tool_call_error' && event.error.includes(NO_RECORDING) ? [event.tool_name] : [],
  );
}

function lastUserMessage(transcript: readonly Message[]): string {
  const content = [...transcript].reverse().find((message) => message['role'] === 'user')?.['content'];
  return typeof content === 'string' ? content : JSON.stringify(content ?? '');
}

function failedCase(testCase: EvalCase, id: string, started: number, problem: string): CaseResult {
  return {
    name: testCase.name,
    run_id: id,
    status: 'not started',
    answer: null,
    passed: false,
    checks: [{ check: 'started', passed: false, detail: problem }],
    tools: [],
    llm_calls: 0,
    total_tokens: 0,
    cost_usd: null,
    duration_ms: Date.now() - started,
  };
}
