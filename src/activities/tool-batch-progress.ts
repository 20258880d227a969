import { toolStepErrorContent, type Mutation } from '../context';
import {
  cancelledCallMutation,
  ToolBatchCheckpoint,
  utf8Bytes,
  type SelfRefIntentRecord,
  type ToolBatchInput,
  type ToolBatchResult,
  type ToolCallRequest,
} from '../runtime';
import type { McpProgress } from './mcp-connections';
import type { SecretRedactor } from './redact';
import type { CallOutcome, Finished, StillRunning } from './tool-call-outcome';

type CustomEvent = NonNullable<ToolBatchResult['custom_events']>[number];

/**
 * A checkpoint rides on every heartbeat (the server keeps only the latest details), so it stays small:
 * inline under the payload-storage threshold (an encrypted heartbeat would be stored anew each second),
 * and a run's routed batches together far below the 4 MB a `describe()` answer may carry. Calls whose
 * results do not fit run again on retry.
 */
export const CHECKPOINT_BYTES = 192 * 1024;

/**
 * A batch's calls as they end: what its heartbeats checkpoint (so a retried attempt keeps what this one
 * finished) and what its result is made of. Heartbeat details reach the server (and history, if the
 * attempt times out): what goes into them (finished calls, progress, custom events) has its secrets
 * removed once, when it arrives, as from the batch's result.
 */
export class BatchProgress {
  // Keyed by position: a provider may repeat a call id within one batch.
  private readonly finished = new Map<number, Finished>();
  private readonly stillRunning = new Map<number, StillRunning>();
  /** Finished calls in completion order. */
  private readonly order: number[] = [];
  private readonly customEvents: Array<{ index: number; event: CustomEvent }> = [];
  /** MCP progress notifications of running calls, by call id: shown with the heartbeat (not recorded). */
  private readonly progress = new Map<string, McpProgress>();

  constructor(
    private readonly input: ToolBatchInput,
    /** The checkpoint's budget in bytes. */
    private readonly budget: number,
    private readonly redactor: SecretRedactor | undefined,
  ) {}

  /** What the previous attempt finished, from its last checkpoint, if that belongs to this very batch. */
  resume(heartbeatDetails: unknown): void {
    for (const done of resumedCalls(heartbeatDetails, this.input)) {
      const { index, custom_events: events, ...outcome } = done;
      this.finished.set(index, outcome);
      this.order.push(index);
      for (const event of events) this.customEvents.push({ index, event });
    }
  }

  has(index: number): boolean {
    return this.finished.has(index);
  }

  /** The heartbeat's details: the checkpoint, and the progress of running MCP calls. */
  details() {
    return {
      ...checkpoint(
        this.input,
        { finished: this.finished, order: this.order, customEvents: this.customEvents },
        this.budget,
      ),
      ...(this.progress.size > 0 ? { progress: Object.fromEntries(this.progress) } : {}),
    };
  }

  /** A running call's progress notification. */
  progressed(callId: string, update: McpProgress): void {
    this.progress.set(callId, this.redacted(update));
  }

  /** A custom event a running call emitted (`context.emit`). */
  emitted(index: number, call: ToolCallRequest, eventName: string, data: CustomEvent['data']): void {
    this.customEvents.push({
      index,
      event: this.redacted({ tool_call_id: call.id, tool_name: call.name, event_name: eventName, data }),
    });
  }

  /** A call's outcome; true when it finished, and the checkpoint should go out at once. */
  settle(index: number, call: ToolCallRequest, outcome: CallOutcome): boolean {
    this.progress.delete(call.id);
    if (outcome === null) return false;
    if ('note' in outcome) {
      this.stillRunning.set(index, this.redacted(outcome));
      return false;
    }
    this.finished.set(index, this.redacted(outcome));
    this.order.push(index);
    return true;
  }

  /** Whether every call of the batch has finished (its result, sent next, is then the checkpoint). */
  complete(): boolean {
    return this.finished.size === this.input.calls.length;
  }

  /** The batch's result in declared order, within `maxBatchBytes` when payloads go inline. */
  result(aborted: boolean, maxBatchBytes: number | undefined): ToolBatchResult {
    const batch = {
      ...batchResult(
        this.input.calls,
        { finished: this.finished, order: this.order, stillRunning: this.stillRunning },
        aborted,
      ),
      custom_events: this.customEvents.map(({ event }) => event),
    };
    return maxBatchBytes === undefined ? batch : withinBudget(batch, this.input.calls, maxBatchBytes);
  }

  private redacted<T>(value: T): T {
    return this.redactor?.containsSecret(value) ? this.redactor.redactValue(value) : value;
  }
}

/**
 * The batch's progress for its heartbeat: counts for people, and the finished calls (in completion
 * order, as many as fit the budget) for a retried attempt.
 */
function checkpoint(
  input: ToolBatchInput,
  {
    finished,
    order,
    customEvents,
  }: {
    finished: Map<number, Finished>;
    order: number[];
    customEvents: Array<{ index: number; event: CustomEvent }>;
  },
  budget: number,
): ToolBatchCheckpoint & { finished: number; of: number } {
  // Later calls may still fit when an earlier large one did not.
  const done: ToolBatchCheckpoint['done'] = [];
  let bytes = 0;
  for (const index of order) {
    const entry = {
      index,
      ...finished.get(index)!,
      custom_events: customEvents.filter((event) => event.index === index).map(({ event }) => event),
    };
    const size = utf8Bytes(JSON.stringify(entry));
    if (bytes + size > budget) continue;
    bytes += size;
    done.push(entry);
  }
  return {
    iteration: input.iteration,
    finished: order.length,
    of: input.calls.length,
    call_ids: input.calls.map((call) => call.id),
    done,
  };
}

/** What the previous attempt finished, if its checkpoint belongs to this very batch. */
function resumedCalls(details: unknown, input: ToolBatchInput): ToolBatchCheckpoint['done'] {
  const parsed = ToolBatchCheckpoint.safeParse(details);
  if (!parsed.success) return [];
  const { iteration, call_ids: ids, done } = parsed.data;
  const same =
    iteration === input.iteration &&
    ids.length === input.calls.length &&
    ids.every((id, index) => id === input.calls[index]!.id);
  return same ? done.filter((entry) => entry.index < input.calls.length) : [];
}

/**
 * Declared order: plain results and cancellations, then multimodal results (spec 7.6 step 5). Reports in
 * completion order, then those of calls an abort left running (their cancellation says so).
 */
function batchResult(
  calls: readonly ToolCallRequest[],
  {
    finished,
    order,
    stillRunning,
  }: { finished: Map<number, Finished>; order: number[]; stillRunning: Map<number, StillRunning> },
  wasAborted: boolean,
): ToolBatchResult {
  const mutations: Mutation[] = [];
  const multimodal: Mutation[] = [];
  const unfinished: string[] = [];
  const intents: SelfRefIntentRecord[] = [];
  for (const [index, call] of calls.entries()) {
    const done = finished.get(index);
    if (done?.multimodal) {
      multimodal.push(done.multimodal);
    } else if (done) {
      mutations.push({ type: 'ToolResultMutation', tool_call_id: call.id, content: done.content });
      if (done.intent) intents.push({ tool_call_id: call.id, intent: done.intent });
    } else {
      unfinished.push(call.id);
      mutations.push(cancelledCallMutation(call, stillRunning.get(index)?.note));
    }
  }
  return {
    outcome: wasAborted || unfinished.length > 0 ? 'aborted' : 'completed',
    mutations: [...mutations, ...multimodal],
    reports: [
      ...order.map((id) => finished.get(id)!.report),
      ...[...stillRunning.values()].map((entry) => entry.report),
    ],
    unfinished,
    intents,
  };
}

/**
 * The batch result within the budget: its largest results, one by one, become error results. Declared
 * order is kept: plain results first, multimodal ones last (a replaced multimodal result is plain now).
 */
function withinBudget(result: ToolBatchResult, calls: readonly ToolCallRequest[], budget: number): ToolBatchResult {
  const replaced = new Map<string, Mutation>();
  const current = () => {
    const mutations = result.mutations.map(
      (mutation) => ('tool_call_id' in mutation && replaced.get(mutation.tool_call_id)) || mutation,
    );
    const order = new Map(calls.map((call, index) => [call.id, index]));
    const position = (mutation: Mutation) => ('tool_call_id' in mutation ? (order.get(mutation.tool_call_id) ?? 0) : 0);
    const plain = mutations
      .filter((mutation) => mutation.type !== 'MultimodalToolResultMutation')
      .sort((a, b) => position(a) - position(b));
    return {
      ...result,
      mutations: [...plain, ...mutations.filter((mutation) => mutation.type === 'MultimodalToolResultMutation')],
    };
  };
  for (let batch = current(), bytes = utf8Bytes(JSON.stringify(batch)); bytes > budget;) {
    const candidates = batch.mutations.filter(
      (mutation) =>
        (mutation.type === 'ToolResultMutation' || mutation.type === 'MultimodalToolResultMutation') &&
        !replaced.has(mutation.tool_call_id),
    );
    const largest = candidates.sort((a, b) => JSON.stringify(b).length - JSON.stringify(a).length)[0];
    if (!largest || !('tool_call_id' in largest)) break;
    const message = `the batch's results are ${bytes} bytes together, over the ${budget}-byte budget of one payload; this result was the largest`;
    replaced.set(largest.tool_call_id, {
      type: 'ToolResultMutation',
      tool_call_id: largest.tool_call_id,
      content: toolStepErrorContent(message),
    });
    batch = current();
    bytes = utf8Bytes(JSON.stringify(batch));
  }
  return current();
}
