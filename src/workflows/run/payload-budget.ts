import { INLINE_PAYLOAD_BUDGET, utf8Bytes, type AgentSpec } from '../../runtime';
import { failure, FailureType } from '../../common';

export { INLINE_PAYLOAD_BUDGET };

/**
 * The JSON size of a payload a workflow is about to send, and whether it may: always with payloads by
 * reference (the worker's External Storage takes anything over its threshold), else within the budget.
 */
export function payloadFits(
  agent: Pick<AgentSpec, 'payloads_by_reference'>,
  value: unknown,
): { fits: boolean; bytes: number } {
  // Only a worker that says it sends everything inline gets the budget; older specs say nothing.
  if (agent.payloads_by_reference !== false) return { fits: true, bytes: 0 };
  const bytes = utf8Bytes(JSON.stringify(value));
  return { fits: bytes <= INLINE_PAYLOAD_BUDGET, bytes };
}

/**
 * A workflow result that would break the payload limit fails the run with a clear error: completing it
 * would fail the workflow task again and again instead.
 */
export function checkedResult<T>(agent: Pick<AgentSpec, 'payloads_by_reference'>, result: T, what: string): T {
  const { fits, bytes } = payloadFits(agent, result);
  if (fits) return result;
  throw failure(
    FailureType.ResultTooLarge,
    `the ${what} is ${bytes} bytes, over Temporal's payload limit; with PATCHLOOP_PAYLOAD_STORAGE=local or s3 (the default is local) large payloads go by reference`,
  );
}
