import {
  addUsage,
  CHARS_PER_TOKEN,
  checkName,
  judgeMessages,
  judgeVerdict,
  replyContent,
  rewrittenArguments,
  stageChecksFor,
  type AgentSpec,
  type GuardrailCheck,
  type GuardrailStage,
  type GuardrailSubject,
  type GuardrailVerdict,
} from '../../runtime';
import { affordable, charge } from './budget-gate';
import { callLlmPhase, type CallContext } from './llm-call';
import { emit, type Run } from '../run/run-state';
import { payloadFits } from '../run/payload-budget';

/**
 * What a stage of guardrails decided: the text goes on (as the checks left it), is blocked, or waits for
 * a person (`ask`; the stage's caller asks, or gates the call).
 */
export type Screening =
  | { decision: 'allow'; text: string; rewritten: boolean }
  | { decision: 'block'; check: string; reason: string }
  | { decision: 'ask'; check: string; reason: string; text: string };

/** Whether the agent checks anything at this stage. */
export function checksAt(agent: Pick<AgentSpec, 'guardrails'>, stage: GuardrailStage): boolean {
  return stageChecksFor(agent.guardrails, stage).length > 0;
}

/**
 * Runs a stage's checks on one subject, in order (docs/guardrails.md): consecutive code checks in one
 * `checkGuardrails` activity, a judge as a model call of its own (charged to the run's budget). Each
 * check reads the text as the checks before it left it; the first block or ask ends the stage. Every
 * verdict is logged (`guardrail_verdict`), without the text. Nothing here reads a clock or the world:
 * a replay takes the same verdicts from history.
 */
export async function screen(
  guard: CallContext,
  subject: GuardrailSubject,
  eventIteration: number,
): Promise<Screening> {
  const checks = stageChecksFor(guard.agent.guardrails, subject.stage, subject.tool?.name);
  let text = subject.text;
  let rewritten = false;
  for (let at = 0; at < checks.length;) {
    const group = codeChecksFrom(checks, at);
    const next = checks[at]!;
    const judged = group.length === 0 && 'judge' in next ? next : undefined;
    const names = judged ? [checkName(judged)] : group.map(checkName);
    const current = { ...subject, text };
    const verdicts = judged
      ? [await judge(guard, judged, current, eventIteration)]
      : await codeVerdicts(guard, group, current);
    at += names.length;
    for (const [index, raw] of verdicts.entries()) {
      const check = names[index]!;
      const verdict = subject.stage === 'tool' ? rewrittenArguments(raw) : raw;
      logVerdict(guard.run, subject, check, verdict, eventIteration);
      if (verdict.decision === 'block') return { decision: 'block', check, reason: verdict.reason };
      if (verdict.decision === 'ask') return { decision: 'ask', check, reason: verdict.reason, text };
      if (verdict.decision === 'rewrite') {
        text = verdict.text;
        rewritten = true;
      }
    }
  }
  return { decision: 'allow', text, rewritten };
}

/** The code checks that follow one another from `at` (none when a judge is there). */
function codeChecksFrom(checks: readonly GuardrailCheck[], at: number) {
  const group: Array<Extract<GuardrailCheck, { guardrail: string }>> = [];
  for (let index = at; index < checks.length; index += 1) {
    const check = checks[index]!;
    if (!('guardrail' in check)) break;
    group.push(check);
  }
  return group;
}

async function codeVerdicts(
  guard: CallContext,
  group: ReadonlyArray<Extract<GuardrailCheck, { guardrail: string }>>,
  subject: GuardrailSubject,
): Promise<GuardrailVerdict[]> {
  const input = {
    agent: guard.agent.name,
    subject,
    checks: group.map((check) => ({
      guardrail: check.guardrail,
      ...(check.options ? { options: check.options } : {}),
    })),
  };
  // A text the activity's input could not carry blocks: scheduling it would fail the workflow task forever.
  const { fits, bytes } = payloadFits(guard.agent, input);
  if (!fits)
    return [
      {
        decision: 'block',
        reason: `the text is ${bytes} bytes, over what a check's input carries inline (PATCHLOOP_PAYLOAD_STORAGE sends it by reference)`,
      },
    ];
  const result = await guard.activities.checkGuardrails(
    input,
    `guardrails (${subject.stage}): ${group.map(checkName).join(', ')}`,
  );
  return result.verdicts;
}

/**
 * A judge: one model call (the agent's provider, the judge's model or the agent's), not streamed, charged
 * to the run's budget like any call. One the budget cannot afford, or that an abort stopped, blocks.
 */
async function judge(
  guard: CallContext,
  check: Extract<GuardrailCheck, { judge: unknown }>,
  subject: GuardrailSubject,
  eventIteration: number,
): Promise<GuardrailVerdict> {
  const run = guard.run;
  const request = {
    model: check.judge.model ?? guard.agent.model,
    messages: judgeMessages(check.judge.rubric, subject),
    stream: false,
  };
  const written = run.live.requestWriter.write(request);
  const estimate = Math.ceil(written.text.length / CHARS_PER_TOKEN);
  const stop = await affordable(run, { input_tokens: estimate, output_tokens: 0, llm_calls: 1 });
  if (stop)
    return { decision: 'block', reason: `the run's budget cannot afford the judge (${stop.exceeded.join(', ')})` };
  const reply = await callLlmPhase(
    guard,
    request,
    written,
    { iteration: eventIteration, purpose: 'guardrail' },
    `guardrail judge ${checkName(check)}`,
  );
  run.durable.usage = addUsage(run.durable.usage, reply.usage);
  charge(run, reply, estimate);
  if (reply.outcome !== 'completed') return { decision: 'block', reason: 'the judge was stopped by an abort' };
  return judgeVerdict(replyContent(reply));
}

/** One verdict in the run's log: the stage, the check, what it decided and why; never the text. */
function logVerdict(
  run: Run,
  subject: GuardrailSubject,
  check: string,
  verdict: GuardrailVerdict,
  eventIteration: number,
): void {
  emit(
    run,
    {
      event_type: 'custom_event',
      event_name: 'guardrail_verdict',
      data: {
        stage: subject.stage,
        check,
        decision: verdict.decision,
        ...(verdict.reason !== undefined ? { reason: verdict.reason } : {}),
      },
      tool_name: subject.tool?.name ?? '',
      tool_call_id: subject.tool?.call_id ?? '',
    },
    eventIteration,
  );
}
