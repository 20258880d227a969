import { Context } from '@temporalio/activity';
import {
  checkedVerdict,
  stopsStage,
  type GuardrailCheckInput,
  type GuardrailCheckResult,
  type GuardrailVerdict,
} from '../runtime';
import type { AgentRegistry } from '../agents/registry';

/**
 * The `checkGuardrails` activity: an agent's code checks (`defineGuardrail`) on one subject, in order,
 * each reading the text as the checks before it left it (a rewrite goes on to the next). It stops at the
 * first block or ask. A check that throws or answers no verdict blocks, saying why: a failing guardrail
 * lets nothing through. Its verdicts are the activity's result, recorded in history: a replay reads them.
 */
export function createCheckGuardrails(registry: AgentRegistry) {
  return async function checkGuardrails(input: GuardrailCheckInput): Promise<GuardrailCheckResult> {
    const context = Context.current();
    const workflowId = context.info.workflowExecution?.workflowId ?? 'unknown-workflow';
    const verdicts: GuardrailVerdict[] = [];
    let subject = input.subject;
    for (const check of input.checks) {
      const verdict = await runCheck(registry, check, subject, {
        workflowId,
        agent: input.agent,
        signal: context.cancellationSignal,
      });
      verdicts.push(verdict);
      if (stopsStage(verdict)) break;
      if (verdict.decision === 'rewrite') subject = { ...subject, text: verdict.text };
    }
    return { verdicts };
  };
}

async function runCheck(
  registry: AgentRegistry,
  check: GuardrailCheckInput['checks'][number],
  subject: GuardrailCheckInput['subject'],
  context: { workflowId: string; agent: string; signal: AbortSignal },
): Promise<GuardrailVerdict> {
  const guardrail = registry.guardrail(check.guardrail);
  if (!guardrail)
    return { decision: 'block', reason: `guardrail '${check.guardrail}' is not registered on this worker` };
  try {
    const options = guardrail.options.parse(check.options ?? {});
    return checkedVerdict(guardrail.name, await guardrail.check(subject, options, context));
  } catch (error) {
    // Not its message: an error often quotes what it read (JSON.parse does), and the reason is shown to all.
    Context.current().log.warn(`guardrail '${guardrail.name}' failed`, { error: String(error).slice(0, 2000) });
    return {
      decision: 'block',
      reason: `guardrail '${guardrail.name}' failed (${error instanceof Error ? error.name : typeof error}; the worker's log has the error)`,
    };
  }
}
