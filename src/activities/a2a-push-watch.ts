import { Context } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import type { StreamResponse, TaskState } from '@a2a-js/sdk';
import { changeAmong, changeIn, lastEventIn, pushBody, taskStateName, taskStateNamed } from '../a2a/push-changes';
import { isFinal, taskStateOf } from '../a2a/task-states';
import { endOfResult, endUpdates, statusUpdate, type TaskIds } from '../a2a/task-updates';
import { eventsQuery } from '../common';
import type { A2aTaskChange, A2aTaskChangeInput, AgentRunResult } from '../runtime';
import { startHeartbeat } from './activity-context';

/** How often the wait reads the run's events: at first, then twice as long each time nothing came, up to the most. */
const POLL_MS = { first: 500, most: 5000 };
/** Events read per query. */
const PAGE_EVENTS = 200;
/** The newest events a new watcher reads to find where the task was when its config was created. */
const STARTING_EVENTS = 50;

/**
 * The activity `awaitTaskChange` of a push-notification watcher: waits, heartbeating, for the task's next
 * change of state after the event `after` (the run's event log, read with the `events` query as any
 * follower reads it), and answers it as the StreamResponse to POST. A bounded wait: after `wait_seconds`
 * it answers `none` with the cursor it reached, and the watcher asks again. A run that closed without
 * a last event (it failed, or was terminated) ends with its outcome.
 */
export async function awaitTaskChange(input: A2aTaskChangeInput): Promise<A2aTaskChange> {
  const context = Context.current();
  let after = input.after;
  const stopHeartbeat = startHeartbeat(context, () => ({ task: input.task_id, after }));
  const deadline = Date.now() + input.wait_seconds * 1000;
  const ids = { taskId: input.task_id, contextId: input.context_id };
  const known = taskStateNamed(input.state);
  // By id only: the run's latest execution, following its continue-as-new chain.
  const run = context.client.workflow.getHandle(input.task_id);
  try {
    if (after < 0) {
      const start = await startingPoint(run, ids, known);
      if (start.kind !== 'start') return start;
      after = start.after;
    }
    // A run that waits for hours is asked less often: a change is told within 5 s.
    let pause = POLL_MS.first;
    while (Date.now() < deadline) {
      // Read before looking: a run that closed before this read has every event in it.
      const closedBefore = (await run.describe()).status.name !== 'RUNNING';
      const page = await run.query(eventsQuery, { after, limit: PAGE_EVENTS });
      const found = changeAmong(ids, page.events, known);
      after = found.after ?? after;
      if (found.change) return changed(after, found.change);
      if (page.events.length > 0) {
        pause = POLL_MS.first;
        continue;
      }
      if (closedBefore) return await closedRunChange(run, ids, known, after);
      await context.sleep(pause);
      pause = Math.min(pause * 2, POLL_MS.most);
    }
    return { kind: 'none', after, state: input.state };
  } catch (error) {
    // The run is gone (deleted, or past its retention): no change will come.
    if (error instanceof WorkflowNotFoundError) return { kind: 'ended' };
    throw error;
  } finally {
    stopHeartbeat();
  }
}

/** A change found, as the watcher takes it. */
function changed(after: number, update: StreamResponse): A2aTaskChange {
  const state =
    update.payload?.$case === 'task'
      ? update.payload.value.status?.state
      : update.payload?.$case === 'statusUpdate'
        ? update.payload.value.status?.state
        : undefined;
  return { kind: 'change', after, state: taskStateName(state!), final: isFinal(state!), body: pushBody(update) };
}

/**
 * Where a new watcher starts: after the run's newest event. When the task is no longer in the state it
 * was in when the config was created (it moved on before the watcher's first read), after the last
 * event that left it in that state, so the changes since come with their messages; else the state it is
 * in is the first change (a final one read again from its event, so its notification holds the answer).
 */
async function startingPoint(
  run: WorkflowHandle,
  ids: TaskIds,
  known: TaskState,
): Promise<{ kind: 'start'; after: number } | A2aTaskChange> {
  const page = await run.query(eventsQuery, { after: 0, limit: STARTING_EVENTS, last: STARTING_EVENTS });
  const newest = page.events.at(-1)?.seq ?? 0;
  const current = taskStateOf(page.state);
  if (current === known) return { kind: 'start', after: newest };
  const since = lastEventIn(ids, page.events, known);
  if (since !== undefined) return { kind: 'start', after: since };
  if (isFinal(current)) return { kind: 'start', after: Math.max(0, newest - 1) };
  return changed(newest, statusUpdate(ids, current, new Date().toISOString()));
}

/** The change a closed run's outcome makes (read from its result: no worker needed), or `ended`. */
async function closedRunChange(
  run: WorkflowHandle,
  ids: TaskIds,
  known: TaskState,
  after: number,
): Promise<A2aTaskChange> {
  let end: { status: string; answer: string; reason: string };
  try {
    end = endOfResult((await run.result()) as AgentRunResult);
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    end = { status: 'failed', answer: '', reason: (error.cause ?? error).message };
  }
  const change = changeIn(ids, endUpdates(ids, end, new Date().toISOString(), `${ids.taskId}:end`), known);
  return change ? changed(after, change) : { kind: 'ended' };
}
