import { failure, FailureType } from '../../common';
import type { Mutation } from '../../context';
import { blockedContent, type ApprovalRecord, type GuardrailSubject, type LlmPhaseResult } from '../../runtime';
import type { CallContext } from './llm-call';
import { checksAt, screen, type Screening } from './guardrail-checks';
import { awaitDecisions, pendingOf } from '../batch/approval-gate';
import { emit } from '../run/run-state';

/** A stage's outcome once a person answered any `ask`: the text goes on, or it is blocked. */
export type Decided = Exclude<Screening, { decision: 'ask' }>;

/** A stage's checks on one subject, a person deciding where a check asks. */
export async function decide(guard: CallContext, subject: GuardrailSubject, eventIteration: number): Promise<Decided> {
  const screened = await screen(guard, subject, eventIteration);
  return screened.decision === 'ask' ? askPerson(guard, screened, subject, eventIteration) : screened;
}

/**
 * The input checks on a user message (a run's task, a session's message): the text that goes on. A
 * block fails with `GuardrailBlocked`, naming the check and its reason, never the text.
 */
export async function admittedMessage(guard: CallContext, text: string, eventIteration: number): Promise<string> {
  if (!checksAt(guard.agent, 'input')) return text;
  const decided = await decide(guard, { stage: 'input', text }, eventIteration);
  if (decided.decision === 'block')
    throw failure(FailureType.GuardrailBlocked, `guardrail '${decided.check}' blocked the message: ${decided.reason}`);
  return decided.text;
}

/**
 * The output checks on a model call's answer (a completed reply without tool calls), before its end
 * event, the transcript or any reader has it: its text as they go on (a rewrite), or `blocked` (the
 * failure to end the turn with) and the reply replaced by a notice that names the check.
 */
export async function checkedAnswer(
  guard: CallContext,
  result: LlmPhaseResult,
  eventIteration: number,
): Promise<{ result: LlmPhaseResult; blocked?: ReturnType<typeof failure> }> {
  const answer = result.outcome === 'completed' ? answerOf(result.mutations) : undefined;
  if (!answer || !checksAt(guard.agent, 'output')) return { result };
  const decided = await decide(guard, { stage: 'output', text: answer.content }, eventIteration);
  if (decided.decision === 'allow' && !decided.rewritten) return { result };
  const content = decided.decision === 'allow' ? decided.text : blockedContent('output', decided.check, decided.reason);
  const mutations = result.mutations.map((mutation) => (mutation === answer ? { ...answer, content } : mutation));
  // An abort that stopped a check ends the turn aborted (the loop sees it), the answer withheld.
  if (decided.decision === 'allow' || guard.run.live.abort.requested) return { result: { ...result, mutations } };
  return {
    result: { ...result, mutations },
    blocked: failure(
      FailureType.GuardrailBlocked,
      `guardrail '${decided.check}' blocked the answer: ${decided.reason}`,
    ),
  };
}

/** The reply's answer: its assistant message when it calls no tools. */
function answerOf(mutations: readonly Mutation[]) {
  const [reply] = mutations;
  if (mutations.length !== 1 || reply?.type !== 'AssistantMessageMutation') return undefined;
  if ((reply.tool_calls ?? []).length > 0 || typeof reply.content !== 'string') return undefined;
  return reply as typeof reply & { content: string };
}

/** The longest excerpt of a text a person reads in an approval request (`approvals`, the console). */
const ASK_EXCERPT_CHARS = 16_000;

/**
 * A stage's `ask` outside a tool batch (the input, an answer): a person decides through the run's
 * approvals (`patchloop approve RUN guardrail-...`, the console), reading an excerpt of the text and the
 * check's reason. Approved, it goes on; rejected, timed out (`approval_timeout_seconds`) or aborted, it
 * is blocked.
 */
async function askPerson(
  guard: CallContext,
  asked: Extract<Screening, { decision: 'ask' }>,
  subject: Pick<GuardrailSubject, 'stage' | 'text'>,
  eventIteration: number,
): Promise<Decided> {
  const run = guard.run;
  const record: ApprovalRecord = {
    // Unique in the chain: the number of the event that asks.
    tool_call_id: `guardrail-${subject.stage}-${run.durable.event_seq + 1}`,
    tool_name: `guardrail:${asked.check}`,
    arguments: { stage: subject.stage, reason: asked.reason, text: asked.text.slice(0, ASK_EXCERPT_CHARS) },
    requested_at: new Date(Date.now()).toISOString(),
  };
  run.live.approvals = [record];
  // The excerpt is for the person asked (`approvals`, the pending query), not for the run's log.
  const pending = pendingOf(record);
  emit(
    run,
    { event_type: 'approval_requested', ...pending, arguments: { stage: subject.stage, reason: asked.reason } },
    eventIteration,
  );
  await awaitDecisions(guard, eventIteration);
  run.live.approvals = [];
  const decision = record.decision;
  if (decision?.approved && !run.live.abort.requested)
    return { decision: 'allow', text: asked.text, rewritten: asked.text !== subject.text };
  const why = run.live.abort.requested ? 'the run was aborted' : (decision?.reason ?? 'a person rejected it');
  return { decision: 'block', check: asked.check, reason: `${asked.reason} (asked: ${why})` };
}
