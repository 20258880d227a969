import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter, type DataConverter } from '@temporalio/common';
import {
  decodeFromPayloadsAtIndex,
  extstoreInboundOptions,
  visit,
  walkGetWorkflowExecutionHistoryResponse,
} from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { failure, FailureType } from '../common/failure-types';
import {
  FORK_CAPTURE_MEMO,
  forkPoint,
  forkUnitOf,
  INLINE_PAYLOAD_BUDGET,
  inheritedSettings,
  utf8Bytes,
  type ForkUnit,
} from '../runtime';
import { startHeartbeat } from './activity-context';

/** The worker's own workflow code and data converter: a fork's replay runs exactly what its runs run. */
export interface ForkReplayCode {
  workflows: Pick<ReplayWorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions'>;
  dataConverter: DataConverter;
  /** Whether large payloads go by reference (else the captured state must fit inline). */
  payloadsByReference: boolean;
}

export interface CaptureRunStateInput {
  workflow_id: string;
  /** The iteration of a run, or the turn of a session. */
  at: number;
  /** What the fork is, and so what the original must be (forks recorded before sessions forked: `agentRun`). */
  workflow_type?: 'agentRun' | 'chatSession';
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * A fork's point (`runtime/fork.ts`): the state the original run carried before its model request at
 * iteration `at`. The run of its continue-as-new chain that made that request is found by each run's
 * first iteration (its start event's carried state); its history is then replayed by this worker's own
 * workflow code, with a memo that asks the replay to hand the state over (`workflows/run/fork-state.ts`).
 * Nothing runs again: a replay only reads recorded results. A run that made no request at `at`, is not
 * an `agentRun` or does not exist fails with `ForkUnavailable`.
 */
export function createCaptureRunState(replay: () => ForkReplayCode | undefined) {
  return {
    async captureRunState(input: CaptureRunStateInput): Promise<unknown> {
      const code = replay();
      if (!code) throw failure(FailureType.ForkUnavailable, 'this worker serves tools only: it runs no workflow code');
      const context = Context.current();
      const stopHeartbeat = startHeartbeat(context, () => ({ forking: input.workflow_id, at: input.at }));
      try {
        const { runId, originalInput } = await runWithIteration(context, input);
        const history = await context.client.workflow.getHandle(input.workflow_id, runId).fetchHistory();
        const start = history.events?.[0]?.workflowExecutionStartedEventAttributes;
        if (!start) throw failure(FailureType.ForkUnavailable, `the history of ${input.workflow_id} has no start`);
        start.memo = {
          fields: { ...start.memo?.fields, [FORK_CAPTURE_MEMO]: defaultPayloadConverter.toPayload(input.at) },
        };
        const reached: number[] = [];
        let captured: unknown;
        // A run whose first workflow task has not completed yet (it has just continued as new) has reached
        // nothing; a replay of a history without one would wait for it forever.
        const replayed = history.events?.some((event) => event.workflowTaskCompletedEventAttributes)
          ? Worker.runReplayHistory(
              {
                ...code.workflows,
                dataConverter: code.dataConverter,
                replayName: `fork of ${input.workflow_id}`,
                sinks: {
                  patchloopFork: {
                    reached: {
                      fn: (_info, iteration: number) => void reached.push(iteration),
                      callDuringReplay: true,
                    },
                    captured: {
                      fn: (_info, _iteration: number, state: unknown) => void (captured = state),
                      callDuringReplay: true,
                    },
                  },
                  patchloop: { runEnded: { fn: () => undefined }, abortRequested: { fn: () => undefined } },
                },
              },
              history,
              input.workflow_id,
            )
          : Promise.resolve();
        // The replay goes on to the end of the history: what fails after the point (a run recorded by a
        // build whose code this one cannot replay, say) does not take back what it captured; what fails
        // before it is said once, not retried.
        const failed = await replayed.then(
          () => undefined,
          (error: unknown) => error as Error,
        );
        const unit = unitOf(input);
        if (captured === undefined && failed)
          throw failure(
            FailureType.ForkUnavailable,
            `this worker's code cannot replay ${input.workflow_id} up to ${forkPoint(input.at, unit)}: ${failed.message}`,
          );
        if (captured === undefined) throw failure(FailureType.ForkUnavailable, notReached(input, reached));
        // The original's own overrides travel beside the state (the fork's input takes them where it has none).
        const forked = { ...(captured as object), inherited: inheritedSettings(originalInput) };
        checkFits(code, forked, input);
        return forked;
      } finally {
        stopHeartbeat();
      }
    },
  };
}

/**
 * The run of the chain whose first iteration is `at` or less, walking back from the newest run (a
 * continued run starts at the iteration its carried state names; the first at 0).
 */
async function runWithIteration(
  context: Context,
  input: CaptureRunStateInput,
): Promise<{ runId: string; originalInput: unknown }> {
  const client = context.client;
  const description = await client.workflow
    .getHandle(input.workflow_id)
    .describe()
    .catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError)
        throw failure(FailureType.ForkUnavailable, `no run with workflow id ${input.workflow_id}`);
      throw error;
    });
  const expected = input.workflow_type ?? 'agentRun';
  if (description.type !== expected)
    throw failure(
      FailureType.ForkUnavailable,
      `${input.workflow_id} is a ${description.type}, not a ${expected}: a fork is a workflow of its original's type`,
    );
  let runId: string | undefined = description.runId;
  while (runId) {
    const event: HistoryEvent | undefined = await firstEvent(context, input.workflow_id, runId);
    const start = event?.workflowExecutionStartedEventAttributes;
    const carried = await decodeFromPayloadsAtIndex<
      { state?: { iteration?: number; awaiting_batch?: unknown; turns?: number }; [key: string]: unknown } | undefined
    >(client.options.loadedDataConverter, 0, start?.input?.payloads);
    const state = carried?.state;
    // A session's run begins with the turn after those it carried; a run that continued as new while a
    // batch ran resumes the batch first: its first request is the next iteration's.
    const first =
      expected === 'chatSession' ? (state?.turns ?? 0) + 1 : (state?.iteration ?? 0) + (state?.awaiting_batch ? 1 : 0);
    if (first <= input.at) return { runId, originalInput: carried };
    runId = start?.continuedExecutionRunId ?? undefined;
  }
  throw failure(
    FailureType.ForkUnavailable,
    `${input.workflow_id} has no run that reached ${forkPoint(input.at, unitOf(input))}`,
  );
}

/** A run's start event, its payloads read back from External Storage when they went there. */
async function firstEvent(context: Context, workflowId: string, runId: string): Promise<HistoryEvent | undefined> {
  const client = context.client;
  const response = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  await visit(
    response,
    walkGetWorkflowExecutionHistoryResponse,
    extstoreInboundOptions(client.options.loadedDataConverter.externalStorage),
  );
  return response.history?.events?.[0];
}

/** Without payloads by reference the state must travel inline: a state too large says what to do. */
function checkFits(code: ForkReplayCode, state: unknown, input: CaptureRunStateInput): void {
  if (code.payloadsByReference) return;
  const bytes = utf8Bytes(JSON.stringify(state));
  if (bytes > INLINE_PAYLOAD_BUDGET)
    throw failure(
      FailureType.ForkUnavailable,
      `the context of ${input.workflow_id} at ${forkPoint(input.at, unitOf(input))} is ${bytes} bytes, over Temporal's payload limit: fork it on workers with PATCHLOOP_PAYLOAD_STORAGE=local or s3`,
    );
}

/** What `at` counts: a session's turns, a run's iterations. */
function unitOf(input: CaptureRunStateInput): ForkUnit {
  return forkUnitOf(input.workflow_type);
}

/** A point the replay never reached, and the ones that run of the chain did reach. */
function notReached(input: CaptureRunStateInput, reached: number[]): string {
  if (unitOf(input) === 'turn')
    return (
      `${input.workflow_id} had no turn ${input.at}` +
      (reached.length > 0
        ? ` (that run of it began turns ${iterationRanges(reached)})`
        : ' (that run of it began none)')
    );
  return (
    `${input.workflow_id} made no model request at iteration ${input.at}` +
    (reached.length > 0
      ? ` (that run of its chain made them at iterations ${iterationRanges(reached)})`
      : ' (that run of its chain made none)')
  );
}

/** 3, 4, 5, 9 → "3–5, 9". */
function iterationRanges(iterations: number[]): string {
  const sorted = [...new Set(iterations)].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let index = 0; index < sorted.length;) {
    let end = index;
    while (end + 1 < sorted.length && sorted[end + 1] === sorted[end]! + 1) end += 1;
    ranges.push(end === index ? `${sorted[index]}` : `${sorted[index]}–${sorted[end]}`);
    index = end + 1;
  }
  return ranges.join(', ');
}
