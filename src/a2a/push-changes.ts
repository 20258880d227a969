import {
  StreamResponse,
  taskStateFromJSON,
  taskStateToJSON,
  type TaskState,
  type Artifact,
  type Part,
  type TaskStatus,
} from '@a2a-js/sdk';
import { cutToBytes, type RunEvent } from '../runtime';
import { isFinal } from './task-states';
import { stateOf, updatesOf, type TaskIds } from './task-updates';

/** The most of an artifact's text (the answer) a push body carries, in UTF-8 bytes; the rest is cut. */
const PUSH_MAX_ARTIFACT_TEXT_BYTES = 64 * 1024;
/** The most of a status message's text (a call waiting for a decision names its arguments) a push body carries. */
const PUSH_MAX_MESSAGE_TEXT_BYTES = 4 * 1024;

/** A task state's wire name (`TASK_STATE_WORKING`): how a watcher keeps it, and how bodies spell it. */
export function taskStateName(state: TaskState): string {
  return taskStateToJSON(state);
}

/** A task state from its wire name. */
export function taskStateNamed(name: string): TaskState {
  return taskStateFromJSON(name);
}

/**
 * The change a push notification tells of, among one event's updates: the first whose state is not the
 * one the receiver knows. A final state comes as the task itself, its artifacts (the answer) with it, so
 * the last notification holds the outcome; another state as its status update. Updates that change no
 * state (another tool called while working) tell nothing.
 */
export function changeIn(ids: TaskIds, updates: StreamResponse[], known: TaskState): StreamResponse | undefined {
  const artifacts: Artifact[] = [];
  for (const update of updates) {
    if (update.payload?.$case === 'artifactUpdate' && update.payload.value.artifact)
      artifacts.push(update.payload.value.artifact);
    const state = stateOf(update);
    if (state === undefined || state === known || update.payload?.$case !== 'statusUpdate') continue;
    if (!isFinal(state)) return update;
    const task = {
      id: ids.taskId,
      contextId: ids.contextId,
      status: update.payload.value.status,
      artifacts,
      history: [],
      metadata: undefined,
    };
    return { payload: { $case: 'task', value: task } };
  }
  return undefined;
}

/** The first change among events read in order after the receiver's state, and the cursor it leaves. */
export function changeAmong(
  ids: TaskIds,
  events: readonly RunEvent[],
  known: TaskState,
): { after: number | undefined; change: StreamResponse | undefined } {
  let after: number | undefined;
  for (const event of events) {
    after = event.seq;
    const change = changeIn(ids, updatesOf(ids, event), known);
    if (change) return { after, change };
  }
  return { after, change: undefined };
}

/** The `seq` of the last of these events that leaves the task in `state`, if one does. */
export function lastEventIn(ids: TaskIds, events: readonly RunEvent[], state: TaskState): number | undefined {
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index]!;
    if (updatesOf(ids, event).some((update) => stateOf(update) === state)) return event.seq;
  }
  return undefined;
}

/** A part with its text cut to `most` bytes. */
function cutPart(part: Part, most: number): Part {
  return part.content?.$case === 'text'
    ? { ...part, content: { $case: 'text', value: cutToBytes(part.content.value, most) } }
    : part;
}

/** A status with its message's texts cut to their bound. */
function boundedStatus(status: TaskStatus | undefined): TaskStatus | undefined {
  if (!status?.message) return status;
  const parts = status.message.parts.map((part) => cutPart(part, PUSH_MAX_MESSAGE_TEXT_BYTES));
  return { ...status, message: { ...status.message, parts } };
}

/**
 * The JSON body of a push notification: the StreamResponse as the A2A 1.0 JSON binding writes it (what
 * the SDKs' receivers parse), its texts bounded (the answer to 64 KiB, a status message to 4 KiB).
 */
export function pushBody(update: StreamResponse): string {
  const payload = update.payload;
  let bounded = update;
  if (payload?.$case === 'statusUpdate')
    bounded = {
      payload: { $case: 'statusUpdate', value: { ...payload.value, status: boundedStatus(payload.value.status) } },
    };
  if (payload?.$case === 'task')
    bounded = {
      payload: {
        $case: 'task',
        value: {
          ...payload.value,
          status: boundedStatus(payload.value.status),
          artifacts: payload.value.artifacts.map((artifact) => ({
            ...artifact,
            parts: artifact.parts.map((part) => cutPart(part, PUSH_MAX_ARTIFACT_TEXT_BYTES)),
          })),
        },
      },
    };
  return JSON.stringify(StreamResponse.toJSON(bounded));
}
