import { Role, TaskState, type Message, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';

/** A JavaScript A2A client (the SDK's ClientFactory) for one agent of a gateway, on one binding, with a key. */
export function a2aClient(
  gatewayUrl: string,
  agent: string,
  binding: 'JSONRPC' | 'HTTP+JSON',
  key: string,
): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const transports =
    binding === 'JSONRPC' ? [new JsonRpcTransportFactory({ fetchImpl })] : [new RestTransportFactory({ fetchImpl })];
  // The card's path is relative to the agent's URL: it ends with a slash.
  return new ClientFactory({ transports }).createFromUrl(`${gatewayUrl}/a2a/${agent}/`);
}

/** A user's text message, on a task or in a context when given. */
export function userMessage(text: string, on: { taskId?: string; contextId?: string } = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: on.contextId ?? '',
    taskId: on.taskId ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function sendRequest(message: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

const textOf = (parts: Message['parts'] | undefined) =>
  (parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');

/** A task state's name without its prefix: COMPLETED, INPUT_REQUIRED, ... */
const stateName = (state: TaskState | undefined) =>
  (TaskState[state ?? TaskState.TASK_STATE_UNSPECIFIED] ?? 'UNRECOGNIZED').replace('TASK_STATE_', '');

/** A task as one line: its state, its status message's text and its artifacts' texts. */
export function taskLine(task: Task): string {
  const state = stateName(task.status?.state);
  const message = textOf(task.status?.message?.parts);
  const artifacts = task.artifacts.map((artifact) => `${artifact.artifactId}=${textOf(artifact.parts)}`);
  return [`task ${state}`, ...(message ? [message] : []), ...artifacts].join(' | ');
}

/** A stream's update as one line (what a client sees of it), the same in every test and binding. */
export function updateLine(update: StreamResponse): string {
  const payload = update.payload;
  switch (payload?.$case) {
    case 'task':
      return taskLine(payload.value);
    case 'statusUpdate': {
      const state = stateName(payload.value.status?.state);
      const message = textOf(payload.value.status?.message?.parts);
      return `status ${state}${message ? ` | ${message}` : ''}`;
    }
    case 'artifactUpdate':
      return `artifact ${payload.value.artifact?.artifactId}=${textOf(payload.value.artifact?.parts)}`;
    case 'message':
      return `message ${textOf(payload.value.parts)}`;
    default:
      return 'nothing';
  }
}

/** Reads a stream to its end, as lines. */
export async function streamLines(
  stream: AsyncIterable<StreamResponse>,
  each?: (line: string) => void,
): Promise<string[]> {
  const lines: string[] = [];
  for await (const update of stream) {
    lines.push(updateLine(update));
    each?.(lines.at(-1)!);
  }
  return lines;
}
