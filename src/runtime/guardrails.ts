import { z } from 'zod';
import { JsonObject } from '../context';
import { sharedSchema } from '../context/shared-schema';
import { globMatches } from './tool-policy';

/**
 * Guardrails (docs/guardrails.md): checks an agent runs on what comes in (the run's task, every user
 * message), on each tool call's arguments before it runs, on each tool result before the model reads
 * it, and on each answer before any reader sees it. Pure: the workflow runs the checks (code checks in
 * the `checkGuardrails` activity, judges as model calls) and carries out their verdicts.
 */

export const GUARDRAIL_STAGES = ['input', 'output', 'tool', 'tool_result'] as const;
export type GuardrailStage = (typeof GUARDRAIL_STAGES)[number];

/** The most checks one stage holds: each runs in the run's path. */
const MAX_STAGE_CHECKS = 20;

/** `tools`: for the tool stages, the tools (names or globs) the check applies to; absent: every tool. */
const toolFilter = () => z.array(z.string().min(1)).min(1).optional();

/** One check: a guardrail registered on the worker (`defineGuardrail`), or a judge (a model and a rubric). */
export const GuardrailCheck = sharedSchema('runtime/guardrails#GuardrailCheck', () =>
  z.union([
    z.strictObject({
      /** The name a worker registered it under (`defineGuardrail({ name })`). */
      guardrail: z.string().min(1),
      /** Passed to the check as given (its own zod schema checks them when the worker starts). */
      options: JsonObject.optional(),
      tools: toolFilter(),
    }),
    z.strictObject({
      judge: z.strictObject({
        /** What the judge decides by: the model reads it with the text to judge and answers a verdict. */
        rubric: z.string().min(1).max(16_000),
        /** The judge's model (the agent's provider); absent: the agent's model. */
        model: z.string().min(1).optional(),
        /** How events and `show` name it; absent: `judge`. */
        name: z.string().min(1).max(100).optional(),
      }),
      tools: toolFilter(),
    }),
  ]),
);
export type GuardrailCheck = z.infer<typeof GuardrailCheck>;

const stageChecks = () => z.array(GuardrailCheck).max(MAX_STAGE_CHECKS).default([]);

/** An agent's `guardrails`: the checks of each stage, run in order. */
export const GuardrailSettings = sharedSchema('runtime/guardrails#GuardrailSettings', () =>
  z.strictObject({
    input: stageChecks(),
    output: stageChecks(),
    tool: stageChecks(),
    tool_result: stageChecks(),
  }),
);
export type GuardrailSettings = z.infer<typeof GuardrailSettings>;

/** The longest text a rewrite may give (its UTF-8 stays far under Temporal's payload limit). */
const MAX_REWRITE_CHARS = 256 * 1024;

/** A tool result an abort left unchecked: it goes on as this, not as the tool returned it. */
export const UNCHECKED_RESULT = '<Tool result withheld: the run was aborted before the guardrails checked it>';

/** The longest reason a verdict keeps (events, results and the model read it). */
const MAX_REASON_CHARS = 2000;
const reason = () => z.string().trim().min(1).max(MAX_REASON_CHARS);

/**
 * What a check decides: `allow`; `block` (the text never goes on); `rewrite` (it goes on as `text`, say
 * with a card number redacted); `ask` (a person decides, through the run's approvals).
 */
export const GuardrailVerdict = sharedSchema('runtime/guardrails#GuardrailVerdict', () =>
  z.discriminatedUnion('decision', [
    z.strictObject({ decision: z.literal('allow'), reason: reason().optional() }),
    z.strictObject({ decision: z.literal('block'), reason: reason() }),
    z.strictObject({
      decision: z.literal('rewrite'),
      text: z.string().max(MAX_REWRITE_CHARS),
      reason: reason().optional(),
    }),
    z.strictObject({ decision: z.literal('ask'), reason: reason() }),
  ]),
);
export type GuardrailVerdict = z.infer<typeof GuardrailVerdict>;

/** What a check reads: the stage, its text, and for the tool stages the call. */
export const GuardrailSubject = sharedSchema('runtime/guardrails#GuardrailSubject', () =>
  z.strictObject({
    stage: z.enum(GUARDRAIL_STAGES),
    /** The message, the answer, the tool result, or (stage `tool`) the call's arguments as JSON text. */
    text: z.string(),
    tool: z.strictObject({ name: z.string(), call_id: z.string() }).optional(),
  }),
);
export type GuardrailSubject = z.infer<typeof GuardrailSubject>;

/** Input of the `checkGuardrails` activity: registered checks to run in order on one subject. */
export const GuardrailCheckInput = sharedSchema('runtime/guardrails#GuardrailCheckInput', () =>
  z.strictObject({
    agent: z.string(),
    subject: GuardrailSubject,
    checks: z.array(z.strictObject({ guardrail: z.string(), options: JsonObject.optional() })),
  }),
);
export type GuardrailCheckInput = z.infer<typeof GuardrailCheckInput>;

/** Each check's verdict in order; the list stops at the first `block` or `ask`. */
export const GuardrailCheckResult = sharedSchema('runtime/guardrails#GuardrailCheckResult', () =>
  z.strictObject({ verdicts: z.array(GuardrailVerdict) }),
);
export type GuardrailCheckResult = z.infer<typeof GuardrailCheckResult>;

/** How events, `show` and the console name a check. */
export function checkName(check: GuardrailCheck): string {
  return 'guardrail' in check ? check.guardrail : (check.judge.name ?? 'judge');
}

/** The checks of a stage that apply (for the tool stages: to this tool). */
export function stageChecksFor(
  settings: GuardrailSettings | undefined,
  stage: GuardrailStage,
  toolName?: string,
): GuardrailCheck[] {
  const checks = settings?.[stage] ?? [];
  if (toolName === undefined) return checks;
  return checks.filter((check) => !check.tools || check.tools.some((pattern) => globMatches(pattern, toolName)));
}

/** Whether a verdict ends the stage: nothing after a block or an ask runs. */
export function stopsStage(verdict: GuardrailVerdict): boolean {
  return verdict.decision === 'block' || verdict.decision === 'ask';
}

const STAGE_WORDS: Record<GuardrailStage, string> = {
  input: "a user's message to an AI assistant",
  output: "an AI assistant's answer, before the user sees it",
  tool: 'the arguments of a tool call an AI assistant wants to make (tool: {tool})',
  tool_result: 'the result of a tool call (tool: {tool}), before the AI assistant reads it',
};

/** The judge's request messages: the rubric and how to answer, then the text to judge. */
export function judgeMessages(rubric: string, subject: GuardrailSubject): Array<{ role: string; content: string }> {
  const what = STAGE_WORDS[subject.stage].replace('{tool}', subject.tool?.name ?? '');
  return [
    {
      role: 'system',
      content: [
        `You are a guardrail. Judge ${what} by this rubric:`,
        rubric,
        'Answer with one JSON object and nothing else: {"decision": "allow"} when it passes,',
        '{"decision": "block", "reason": "..."} when it must not go on,',
        '{"decision": "rewrite", "text": "...", "reason": "..."} to let it go on changed,',
        'or {"decision": "ask", "reason": "..."} when a person should decide.',
      ].join('\n'),
    },
    { role: 'user', content: subject.text },
  ];
}

/**
 * A judge's reply as a verdict: the JSON object in it (a code fence around it is fine). A reply that
 * holds no verdict blocks: a judge that cannot be read lets nothing through.
 */
export function judgeVerdict(reply: string): GuardrailVerdict {
  const start = reply.indexOf('{');
  const end = reply.lastIndexOf('}');
  if (start >= 0 && end > start) {
    try {
      const parsed = GuardrailVerdict.safeParse(JSON.parse(reply.slice(start, end + 1)));
      if (parsed.success) return parsed.data;
    } catch {
      // not JSON: blocked below
    }
  }
  // Not quoted: the reply may repeat the text it judged.
  return { decision: 'block', reason: "the judge's reply is not a verdict" };
}

/** A check's outcome as a code check returns it, read safely: anything else blocks, saying why. */
export function checkedVerdict(name: string, value: unknown): GuardrailVerdict {
  const parsed = GuardrailVerdict.safeParse(value);
  if (parsed.success) return parsed.data;
  return {
    decision: 'block',
    reason: `guardrail '${name}' returned no verdict (${parsed.error.issues[0]?.message ?? 'invalid'})`,
  };
}

/**
 * A stage's rewrite of a call's arguments must stay a JSON object (the tool's arguments); anything else
 * blocks the call.
 */
export function rewrittenArguments(verdict: GuardrailVerdict): GuardrailVerdict {
  if (verdict.decision !== 'rewrite') return verdict;
  try {
    const value: unknown = JSON.parse(verdict.text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return verdict;
  } catch {
    // blocked below
  }
  return { decision: 'block', reason: 'a guardrail rewrote the arguments into something other than a JSON object' };
}

/** What a blocked call's result says to the model, and a blocked text's place in the transcript. */
export function blockedContent(stage: GuardrailStage, check: string, reason: string): string {
  const what =
    stage === 'tool' ? 'Tool call blocked' : stage === 'tool_result' ? 'Tool result withheld' : 'Text withheld';
  return `<${what} by guardrail '${check}'. Reason: ${reason}>`;
}
