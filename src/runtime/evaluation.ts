import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/**
 * Evaluations (`patchloop eval`, docs/fork-and-evals.md): a dataset of cases, each a real durable run
 * of a candidate agent (from an input, or forked from a point of a recorded run), scored by what its
 * expectations check. Pure: the dataset's shape, the checks and the judge's verdict; the client runs
 * the cases (`client/evaluation.ts`).
 */

const Judge = sharedSchema('runtime/evaluation#Judge', () =>
  z.strictObject({
    /** The agent that judges: it gets the rubric, the case's input and the answer, and answers JSON. */
    agent: z.string().min(1),
    rubric: z.string().min(1),
    /** The lowest score (0 to 1) that passes. */
    min_score: z.number().min(0).max(1),
  }),
);

const EvalExpectation = sharedSchema('runtime/evaluation#EvalExpectation', () =>
  z.strictObject({
    answer_equals: z.string().optional(),
    answer_contains: z.union([z.string(), z.array(z.string())]).optional(),
    /** A regular expression (JavaScript syntax) the answer must match. */
    answer_matches: z
      .string()
      .refine((text) => {
        try {
          new RegExp(text);
          return true;
        } catch {
          return false;
        }
      }, 'not a valid regular expression')
      .optional(),
    /** The tools the run called, exactly these in this order. */
    tools_exact: z.array(z.string()).optional(),
    /** These tools in this order, others allowed between them. */
    tools_in_order: z.array(z.string()).optional(),
    /** Each of these tools at least once, in any order. */
    tools_any_order: z.array(z.string()).optional(),
    max_llm_calls: z.number().int().positive().optional(),
    max_total_tokens: z.number().int().positive().optional(),
    judge: Judge.optional(),
  }),
);
type EvalExpectation = z.infer<typeof EvalExpectation>;

export const EvalCase = sharedSchema('runtime/evaluation#EvalCase', () =>
  z
    .strictObject({
      name: z.string().min(1),
      input: z.string().min(1).optional(),
      /** A point of a recorded run: the case is a fork of it (its tools answered from that run when recorded). */
      from_run: z.strictObject({ run: z.string().min(1), at: z.number().int().nonnegative() }).optional(),
      /** The run whose tool results answer this case's calls (with `tools: recorded`); default `from_run.run`. */
      recorded_run: z.string().min(1).optional(),
      expect: EvalExpectation,
    })
    .refine((value) => (value.input === undefined) !== (value.from_run === undefined), {
      message: 'a case has either input or from_run',
    }),
);
export type EvalCase = z.infer<typeof EvalCase>;

export const EvalDataset = sharedSchema('runtime/evaluation#EvalDataset', () =>
  z.strictObject({
    cases: z.array(EvalCase).min(1),
    /**
     * `live` (default): tools run. `recorded`: each case's calls are answered from its recorded run's
     * results, and a call with no recording is an error (the case fails) unless `fallthrough` lets the
     * live tool answer it.
     */
    tools: z.enum(['live', 'recorded']).default('live'),
    fallthrough: z.boolean().default(false),
  }),
);
export type EvalDataset = z.infer<typeof EvalDataset>;

/** What a case's run came to, as the checks read it. */
export interface CaseOutcome {
  status: string;
  answer: string | null;
  /** The tools the candidate called, in order (a fork: its own calls only). */
  tools: string[];
  llm_calls: number;
  total_tokens: number;
  /** Calls that had no recording (with recorded tools and no fallthrough). */
  unrecorded: string[];
  /** The judge's verdict, when the case has a judge. */
  judge?: { score: number; reason: string } | { problem: string };
}

export interface CheckResult {
  check: string;
  passed: boolean;
  detail: string;
}

/** Every check a case's expectations name, in a fixed order, on what its run came to. */
export function checkCase(expect: EvalExpectation, outcome: CaseOutcome): CheckResult[] {
  const answer = outcome.answer ?? '';
  const checks: CheckResult[] = [check('completed', outcome.status === 'completed', `the run ended ${outcome.status}`)];
  if (outcome.unrecorded.length > 0)
    checks.push(check('recorded_tools', false, `no recording for ${outcome.unrecorded.join(', ')}`));
  if (expect.answer_equals !== undefined)
    checks.push(check('answer_equals', answer === expect.answer_equals, `answer ${JSON.stringify(answer)}`));
  for (const part of [expect.answer_contains ?? []].flat())
    checks.push(
      check('answer_contains', answer.includes(part), `${JSON.stringify(part)} in ${JSON.stringify(answer)}`),
    );
  if (expect.answer_matches !== undefined)
    checks.push(
      check(
        'answer_matches',
        new RegExp(expect.answer_matches).test(answer),
        `/${expect.answer_matches}/ on ${JSON.stringify(answer)}`,
      ),
    );
  const called = `called ${JSON.stringify(outcome.tools)}`;
  if (expect.tools_exact)
    checks.push(check('tools_exact', JSON.stringify(outcome.tools) === JSON.stringify(expect.tools_exact), called));
  if (expect.tools_in_order)
    checks.push(check('tools_in_order', inOrder(outcome.tools, expect.tools_in_order), called));
  if (expect.tools_any_order)
    checks.push(
      check(
        'tools_any_order',
        expect.tools_any_order.every((tool) => outcome.tools.includes(tool)),
        called,
      ),
    );
  if (expect.max_llm_calls !== undefined)
    checks.push(
      check('max_llm_calls', outcome.llm_calls <= expect.max_llm_calls, `${outcome.llm_calls} model call(s)`),
    );
  if (expect.max_total_tokens !== undefined)
    checks.push(
      check('max_total_tokens', outcome.total_tokens <= expect.max_total_tokens, `${outcome.total_tokens} tokens`),
    );
  if (expect.judge) checks.push(judgeCheck(expect.judge.min_score, outcome.judge));
  return checks;
}

function check(name: string, passed: boolean, detail: string): CheckResult {
  return { check: name, passed, detail };
}

function inOrder(called: readonly string[], wanted: readonly string[]): boolean {
  let next = 0;
  for (const tool of called) if (tool === wanted[next]) next += 1;
  return next === wanted.length;
}

function judgeCheck(minScore: number, verdict: CaseOutcome['judge']): CheckResult {
  if (!verdict) return check('judge', false, 'the judge gave no verdict');
  if ('problem' in verdict) return check('judge', false, verdict.problem);
  return check('judge', verdict.score >= minScore, `score ${verdict.score} (at least ${minScore}): ${verdict.reason}`);
}

/** What the judge agent is asked: the rubric, the task and the answer, and the JSON it must answer. */
export function judgePrompt(rubric: string, task: string, answer: string): string {
  return [
    'Judge an answer by this rubric.',
    `Rubric:\n${rubric}`,
    `Task:\n${task}`,
    `Answer:\n${answer}`,
    'Reply with JSON only: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}',
  ].join('\n\n');
}

const Verdict = sharedSchema('runtime/evaluation#Verdict', () =>
  z.strictObject({ score: z.number().min(0).max(1), reason: z.string() }),
);

/** The judge's answer read as a verdict (a JSON object, fenced or not), or what is wrong with it. */
export function parseVerdict(answer: string | null): { score: number; reason: string } | { problem: string } {
  const text = (answer ?? '').replace(/^\s*```(?:json)?\s*|\s*```\s*$/g, '');
  try {
    const parsed = Verdict.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
  } catch {
    // Not JSON: said below.
  }
  return { problem: `the judge did not answer {"score", "reason"}: ${JSON.stringify(answer)}` };
}
