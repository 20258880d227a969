import type { Message } from '../context';
import type { AgentSpec } from './agent';
import type { AgentRunResult } from './run-input';
import type { ChatSessionResult } from './session';
import { utf8Bytes } from './user-message';

/** Temporal External Storage's default threshold: what specs recorded before the worker's own say. */
const DEFAULT_PAYLOAD_THRESHOLD_BYTES = 256 * 1024;
/** Without a store, what a workflow sends inline stays well under Temporal's 2 MB payload limit. */
export const INLINE_PAYLOAD_BUDGET = 1_500_000;
/** What a payload adds around its JSON: metadata, and with encryption its nonce, tag and key id. */
const PAYLOAD_OVERHEAD_BYTES = 1024;

/**
 * The most JSON a payload a run hands to clients (its result, a transcript page) may hold and still
 * travel inline: under the store's threshold with payloads by reference (a stored payload can only be
 * read with the store, i.e. with patchloop's data converter), under the inline budget without.
 */
export function readableLimitBytes(
  agent: Pick<AgentSpec, 'payloads_by_reference' | 'payload_threshold_bytes'>,
): number {
  if (agent.payloads_by_reference === false) return INLINE_PAYLOAD_BUDGET;
  const threshold = agent.payload_threshold_bytes ?? DEFAULT_PAYLOAD_THRESHOLD_BYTES;
  return Math.max(0, Math.min(threshold, INLINE_PAYLOAD_BUDGET) - PAYLOAD_OVERHEAD_BYTES);
}

/**
 * The result as the run returns it: whole when its JSON fits `limitBytes`. Else the transcript stays
 * out (`transcript: []`, `transcript_omitted`, `transcript_length`, `transcript_query`: read it
 * by the `transcriptPage` query); when even that does not fit, the answer too (`answer: null`, `answer_omitted`: it is the
 * content of the transcript's last message). Status, usage, abort reason and budget always stay.
 */
export function fittedResult(result: AgentRunResult, limitBytes: number): AgentRunResult {
  if (utf8Bytes(JSON.stringify(result)) <= limitBytes) return result;
  const lean = withoutTranscript(result);
  if (result.answer === null || utf8Bytes(JSON.stringify(lean)) <= limitBytes) return lean;
  return { ...lean, answer: null, answer_omitted: true };
}

/** A session's result, the same way: whole when it fits, else without its transcript. */
export function fittedSessionResult(result: ChatSessionResult, limitBytes: number): ChatSessionResult {
  return utf8Bytes(JSON.stringify(result)) <= limitBytes ? result : withoutTranscript(result);
}

function withoutTranscript<T extends { transcript: Message[]; transcript_length?: number | undefined }>(
  result: T,
): T & { transcript_omitted: true; transcript_length: number; transcript_query: 'transcriptPage' } {
  return {
    ...result,
    transcript: [],
    transcript_omitted: true,
    transcript_length: result.transcript_length ?? result.transcript.length,
    transcript_query: 'transcriptPage',
  };
}
