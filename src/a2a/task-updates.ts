import { Role, TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { PendingApproval, RunEvent } from '../runtime';
import { isFinal } from './task-states';

/** The task an update is about. */
export interface TaskIds {
  taskId: string;
  contextId: string;
}

/** A message of the agent's with one text part; `messageId` names where it comes from (stable on resume). */
export function agentMessage(ids: TaskIds, messageId: string, text: string): Message {
  return {
    messageId,
    contextId: ids.contextId,
    taskId: ids.taskId,
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** What a client answers to a call that waits for a decision. */
export function approvalText(pending: readonly Pick<PendingApproval, 'tool_name' | 'arguments'>[]): string {
  const calls = pending.map((call) => `${call.tool_name} ${JSON.stringify(call.arguments)}`).join('; ');
  return `waiting for a decision on ${calls}: answer "approve" or "reject: REASON"`;
}

/** A status update of the task: its state, and a message of the agent's when given. */
export function statusUpdate(
  ids: TaskIds,
  state: TaskState,
  timestamp: string,
  message?: { id: string; text: string },
): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        ...ids,
        status: { state, timestamp, message: message ? agentMessage(ids, message.id, message.text) : undefined },
        metadata: undefined,
      },
    },
  };
}

/** The run's answer, as the task's one artifact. */
function answerUpdate(ids: TaskIds, answer: string): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        ...ids,
        artifact: {
          artifactId: 'answer',
          name: 'answer',
          description: '',
          parts: [
            { content: { $case: 'text', value: answer }, metadata: undefined, filename: '', mediaType: 'text/plain' },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      },
    },
  };
}

/** How a closed run ended, from its result (its answer, or why it was aborted). */
export function endOfResult(result: { status: string; answer: string | null; abort_reason?: string | undefined }): {
  status: string;
  answer: string;
  reason: string;
} {
  return { status: result.status, answer: result.answer ?? '', reason: result.abort_reason ?? '' };
}

/** How a run ended, as its last updates: its answer (when it has one), then the final state. */
export function endUpdates(
  ids: TaskIds,
  end: { status: string; answer: string; reason?: string },
  timestamp: string,
  messageId: string,
): StreamResponse[] {
  const answer = end.status === 'completed' && end.answer !== '' ? [answerUpdate(ids, end.answer)] : [];
  const state =
    end.status === 'completed'
      ? TaskState.TASK_STATE_COMPLETED
      : end.status === 'aborted'
        ? TaskState.TASK_STATE_CANCELED
        : TaskState.TASK_STATE_FAILED;
  const text =
    end.status === 'completed' ? undefined : end.reason || (end.status === 'aborted' ? 'canceled' : end.status);
  return [...answer, statusUpdate(ids, state, timestamp, text === undefined ? undefined : { id: messageId, text })];
}

/**
 * The A2A updates one event of the run's log stands for (most stand for none): the run working, a tool
 * called, a call waiting for a decision (input required) and the decision, and its end. Each message's
 * id is the task's and the event's `seq`, so an update read twice is the same update.
 */
export function updatesOf(ids: TaskIds, event: RunEvent): StreamResponse[] {
  const messageId = `${ids.taskId}:${event.seq}`;
  const working = (text?: string) =>
    statusUpdate(ids, TaskState.TASK_STATE_WORKING, event.timestamp, text ? { id: messageId, text } : undefined);
  switch (event.event_type) {
    case 'react_start':
      return [working()];
    case 'tool_call_start':
      return [working(`calling ${event.tool_name}`)];
    case 'approval_requested':
      return [
        statusUpdate(ids, TaskState.TASK_STATE_INPUT_REQUIRED, event.timestamp, {
          id: messageId,
          text: approvalText([event]),
        }),
      ];
    case 'approval_decided':
      return [working(`${event.tool_name} ${event.approved ? 'approved' : 'rejected'}`)];
    case 'react_end':
      return endUpdates(
        ids,
        { status: event.status, answer: event.final_response, reason: event.abort_reason ?? '' },
        event.timestamp,
        messageId,
      );
    default:
      return [];
  }
}

/** The state an update leaves the task in, for a status update; undefined for an artifact. */
export function stateOf(update: StreamResponse): TaskState | undefined {
  return update.payload?.$case === 'statusUpdate' ? update.payload.value.status?.state : undefined;
}

/** Whether a stream ends after this update (its task reached a final state). */
export function endsStream(update: StreamResponse): boolean {
  const state = stateOf(update);
  return state !== undefined && isFinal(state);
}

/** A task with an update applied: its status replaced, or its artifact added (or replaced, by id). */
export function applied(task: Task, update: StreamResponse): Task {
  const payload = update.payload;
  if (payload?.$case === 'statusUpdate') return { ...task, status: payload.value.status };
  if (payload?.$case === 'artifactUpdate' && payload.value.artifact) {
    const artifact = payload.value.artifact;
    return {
      ...task,
      artifacts: [...task.artifacts.filter((kept) => kept.artifactId !== artifact.artifactId), artifact],
    };
  }
  if (payload?.$case === 'task') return payload.value;
  return task;
}
