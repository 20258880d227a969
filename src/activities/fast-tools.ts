import { Context } from '@temporalio/activity';
import { z } from 'zod';
import { fusedCalls, LlmPhaseResult, replyCallRequests, type LlmPhaseInput } from '../runtime';
import { startHeartbeat } from './activity-context';
import type { InlineBatch } from './tool-batch';
import { CHECKPOINT_BYTES } from './tool-batch-progress';
import { sharedSchema } from '../context/shared-schema';
import type { SecretRedactor } from './redact';

/** Below this much room beside the reply, a batch's results could hardly fit: the batch runs on its own. */
const MIN_BATCH_BYTES = 64 * 1024;

/**
 * The reply's fast tools, run by the model call's activity right after the reply when the workflow
 * allowed it (`fast_tools`) and the reply calls those tools only, within the turn's tool budget: the
 * batch's result rides with the reply, and the iteration needs no workflow task with a local activity
 * of its own (one billable action, and one round trip, fewer). Nothing runs after an abort or a
 * shutdown began. The reply goes out in the activity's heartbeats while the tools run (the first after
 * 250 ms, so quick tools cost none): a retry after a crash takes it from there (`recordedReply`) and runs
 * the tools again, with the same idempotency keys, as a fast batch's retry does. A crash within the first
 * 250 ms asks the model again (docs/agents-and-tools.md#fast-tools).
 */
export interface FastToolSettings {
  runBatch: InlineBatch;
  /** The payload budget of the reply and its batch together; undefined: payloads go by reference. */
  maxBytes: number | undefined;
  /** The most a heartbeat may carry (a stored payload would be uploaded anew each second). */
  heartbeatBytes: number;
  /** Heartbeat details leave the worker without the redaction interceptor: the reply is redacted here. */
  redactor?: SecretRedactor | undefined;
}

/** A reply to run the fast tools of: the one this attempt got, or one an earlier attempt recorded. */
export interface FusableReply {
  result: LlmPhaseResult;
  /** The attempt that got it (part of its calls' idempotency keys). */
  attempt: number;
}

export async function withFastTools(
  settings: FastToolSettings,
  input: LlmPhaseInput,
  reply: FusableReply,
): Promise<LlmPhaseResult> {
  const { result, attempt } = reply;
  const fast = input.fast_tools;
  const context = Context.current();
  if (!fast || result.outcome !== 'completed' || context.cancellationSignal.aborted) return result;
  const calls = replyCallRequests(result);
  if (!fusedCalls(fast, calls)) return result;
  // Inline payloads: the reply and the batch share one payload's budget.
  const room =
    settings.maxBytes === undefined ? undefined : settings.maxBytes - Buffer.byteLength(JSON.stringify(result));
  if (room !== undefined && room < MIN_BATCH_BYTES) return result;
  // Made at the first heartbeat only (most batches end before one): redacting the reply costs a walk of it.
  let details: object | undefined;
  const heartbeatDetails = () => (details ??= { iteration: input.iteration, ...replyDetails(settings, input, reply) });
  const stopHeartbeat = startHeartbeat(context, heartbeatDetails);
  try {
    const batch = await settings.runBatch(
      { agent: input.agent, iteration: fast.iteration, calls, run_chain_id: fast.run_chain_id, reply_attempt: attempt },
      room,
    );
    return { ...result, tool_batch: batch };
  } catch (error) {
    // A shutdown in the first quarter second: the reply goes out with the failure all the same.
    if (!context.info.isLocal) context.heartbeat(heartbeatDetails());
    throw error;
  } finally {
    stopHeartbeat();
  }
}

/** The reply as the heartbeat carries it: redacted, and only when it fits a heartbeat's budget. */
function replyDetails(settings: FastToolSettings, input: LlmPhaseInput, reply: FusableReply) {
  const raw: FusedReply = {
    digest: input.digest,
    llm_call: input.llm_call ?? 0,
    attempt: reply.attempt,
    result: reply.result,
  };
  const redactor = settings.redactor;
  const recorded = redactor ? redactor.redactValue(raw, (text) => redactor.redact(text)) : raw;
  return Buffer.byteLength(JSON.stringify(recorded)) <= Math.min(CHECKPOINT_BYTES, settings.heartbeatBytes)
    ? { fused_reply: recorded }
    : {};
}

/** The reply a model call's activity had when it began its fast tools, kept in its heartbeat details. */
const FusedReply = sharedSchema('activities/fast-tools#FusedReply', () =>
  z.object({ digest: z.string(), llm_call: z.number(), attempt: z.number(), result: LlmPhaseResult }),
);
const FusedDetails = sharedSchema('activities/fast-tools#FusedDetails', () => z.object({ fused_reply: FusedReply }));
type FusedReply = z.infer<typeof FusedReply>;

/** The reply an earlier attempt of this very call recorded before its fast tools, if any. */
export function recordedReply(details: unknown, input: LlmPhaseInput): FusableReply | undefined {
  if (!input.fast_tools) return undefined;
  const parsed = FusedDetails.safeParse(details);
  if (!parsed.success) return undefined;
  const { digest, llm_call, attempt, result } = parsed.data.fused_reply;
  return digest === input.digest && llm_call === (input.llm_call ?? 0) ? { result, attempt } : undefined;
}
