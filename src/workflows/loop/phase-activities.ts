import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { NON_RETRYABLE_PROVIDER_ERRORS } from '../../common';
import type { AgentSpec } from '../../runtime';

type Activity<Name extends keyof Activities> = (
  input: Parameters<Activities[Name]>[0],
  summary: string,
  /** Another task queue than the workflow's (tools routed to their own workers). */
  taskQueue?: string,
) => ReturnType<Activities[Name]>;

/** The phase activities, each call with a one-line summary for the Temporal UI (`llm call 3`, `tools: add`). */
export interface PhaseActivities {
  llmPhase: Activity<'llmPhase'>;
  /** A model call as a local activity on this worker (the agent's `llm_local_activity`). */
  localLlmPhase: Activity<'llmPhase'>;
  toolBatch: Activity<'toolBatch'>;
  /** A batch of fast tools only, as a local activity on this worker (`defineTool({ fast })`). */
  localToolBatch: Activity<'toolBatch'>;
  reviewToolCalls: Activity<'reviewToolCalls'>;
  /** The agent's code guardrails on one subject (`defineGuardrail`): short, and safe to repeat. */
  checkGuardrails: Activity<'checkGuardrails'>;
}

/** The phase activities with the agent's timeouts and retry budgets. */
export function phaseActivities(agent: AgentSpec): PhaseActivities {
  const limits = agent.limits;
  const common = {
    heartbeatTimeout: `${limits.heartbeat_timeout_seconds}s`,
    // Omitted, this silently means TRY_CANCEL and the partial results of an abort are lost.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  } as const;
  // Provider unavailability retries for a time budget, not a handful of attempts: a durable run outlasts
  // an outage. The budget covers every attempt and the backoff between them.
  const llm: ActivityOptions = {
    ...common,
    startToCloseTimeout: `${limits.llm_timeout_seconds}s`,
    scheduleToCloseTimeout: `${limits.llm_retry_budget_seconds}s`,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '60s',
      ...(limits.llm_max_attempts !== null ? { maximumAttempts: limits.llm_max_attempts } : {}),
      nonRetryableErrorTypes: NON_RETRYABLE_PROVIDER_ERRORS,
    },
  };
  const localLlm: LocalActivityOptions = {
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    startToCloseTimeout: llm.startToCloseTimeout!,
    scheduleToCloseTimeout: llm.scheduleToCloseTimeout!,
    retry: llm.retry!,
  };
  // The slowest call, all its own retries included (each attempt under the tool's timeout).
  const worstCase = (tool: (typeof agent.tool_descriptors)[number]) =>
    (tool.timeout_seconds ?? limits.tool_timeout_seconds) * (tool.max_attempts ?? 1) + (tool.retry_wait_seconds ?? 0);
  const slowestTool = Math.max(limits.tool_timeout_seconds, ...agent.tool_descriptors.map(worstCase));
  const tools: ActivityOptions = {
    ...common,
    startToCloseTimeout: `${slowestTool + 30}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: limits.tool_batch_max_attempts },
  };
  // Each fast tool's worst case is capped (FAST_TOOL_MAX_TIMEOUT_SECONDS); the batch runs them concurrently.
  const slowestFast = Math.max(0, ...agent.tool_descriptors.filter((tool) => tool.fast).map(worstCase));
  const local: LocalActivityOptions = {
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    startToCloseTimeout: `${slowestFast + 2}s`,
    retry: tools.retry,
  };
  // Validation and `needsApproval` predicates only: short, and safe to repeat.
  const review: ActivityOptions = {
    startToCloseTimeout: `${limits.tool_timeout_seconds}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: limits.tool_batch_max_attempts },
  };
  // A proxy per call carries its summary (user metadata, not part of the determinism check).
  return {
    llmPhase: (input, summary) => proxyActivities<Activities>({ ...llm, summary }).llmPhase(input),
    localLlmPhase: (input, summary) => proxyLocalActivities<Activities>({ ...localLlm, summary }).llmPhase(input),
    toolBatch: (input, summary, taskQueue) =>
      proxyActivities<Activities>({
        ...tools,
        summary,
        // Older specs have no such limit: routing did not exist when they were recorded.
        ...(taskQueue ? { taskQueue, scheduleToStartTimeout: `${limits.routed_tool_wait_seconds ?? 300}s` } : {}),
      }).toolBatch(input),
    localToolBatch: (input, summary) => proxyLocalActivities<Activities>({ ...local, summary }).toolBatch(input),
    reviewToolCalls: (input, summary) => proxyActivities<Activities>({ ...review, summary }).reviewToolCalls(input),
    checkGuardrails: (input, summary) => proxyActivities<Activities>({ ...review, summary }).checkGuardrails(input),
  };
}
