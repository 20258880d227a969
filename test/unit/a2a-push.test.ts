import { TaskState, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { changeAmong, lastEventIn, pushBody, taskStateName, taskStateNamed } from '../../src/a2a/push-changes';
import { checkedTarget } from '../../src/gateway/a2a/push-configs';
import { a2aPushDeliveryId, a2aPushWatcherId, type RunEvent } from '../../src/runtime';

const ids = { taskId: 'ctx-1~abcd1234', contextId: 'ctx-1' };
const event = (seq: number, fields: Record<string, unknown>) =>
  ({ seq, timestamp: `2026-01-01T00:00:0${seq}Z`, ...fields }) as unknown as RunEvent;
/** A run that calls a tool, asks for a decision on another, then answers. */
const log = [
  event(1, { event_type: 'react_start' }),
  event(2, { event_type: 'tool_call_start', tool_name: 'lookup' }),
  event(3, { event_type: 'tool_call_end', tool_name: 'lookup' }),
  event(4, { event_type: 'approval_requested', tool_name: 'transfer', arguments: { to: 'bob' } }),
  event(5, { event_type: 'approval_decided', tool_name: 'transfer', approved: true }),
  event(6, { event_type: 'tool_call_start', tool_name: 'transfer' }),
  event(7, { event_type: 'react_end', status: 'completed', final_response: 'Paid.' }),
];

/** Every change a watcher finds, reading the log from `after` as it does. */
function changes(from: TaskState) {
  const found: Array<[number, string, string]> = [];
  let known = from;
  let after = 0;
  for (;;) {
    const next = changeAmong(
      ids,
      log.filter((one) => one.seq > after),
      known,
    );
    if (!next.change) return found;
    after = next.after!;
    const body = JSON.parse(pushBody(next.change)) as Record<string, { status: { state: string } }>;
    const [kind] = Object.keys(body);
    found.push([after, kind!, body[kind!]!.status.state]);
    known = taskStateNamed(body[kind!]!.status.state);
  }
}

describe('A2A push notifications: the changes of a task', () => {
  it('tells each change of state once, in order (not every update), the final one as the task with its answer', () => {
    expect(changes(TaskState.TASK_STATE_SUBMITTED)).toEqual([
      [1, 'statusUpdate', 'TASK_STATE_WORKING'],
      [4, 'statusUpdate', 'TASK_STATE_INPUT_REQUIRED'],
      [5, 'statusUpdate', 'TASK_STATE_WORKING'],
      [7, 'task', 'TASK_STATE_COMPLETED'],
    ]);
    // A config created while the task works learns of the next change first.
    expect(changes(TaskState.TASK_STATE_WORKING)[0]).toEqual([4, 'statusUpdate', 'TASK_STATE_INPUT_REQUIRED']);
    const final = changeAmong(ids, [log[6]!], TaskState.TASK_STATE_WORKING).change!;
    expect(JSON.parse(pushBody(final))).toEqual({
      task: {
        id: ids.taskId,
        contextId: 'ctx-1',
        status: { state: 'TASK_STATE_COMPLETED', timestamp: '2026-01-01T00:00:07Z' },
        artifacts: [{ artifactId: 'answer', name: 'answer', parts: [{ text: 'Paid.', mediaType: 'text/plain' }] }],
      },
    });
  });

  it('a watcher that starts late finds the last event in the state its config was created in', () => {
    expect(lastEventIn(ids, log, TaskState.TASK_STATE_INPUT_REQUIRED)).toBe(4);
    expect(lastEventIn(ids, log, TaskState.TASK_STATE_WORKING)).toBe(6);
    expect(lastEventIn(ids, log.slice(0, 3), TaskState.TASK_STATE_INPUT_REQUIRED)).toBeUndefined();
  });

  it('events that change no state leave the cursor past them and tell nothing', () => {
    expect(changeAmong(ids, log.slice(1, 3), TaskState.TASK_STATE_WORKING)).toEqual({ after: 3, change: undefined });
    expect(changeAmong(ids, [], TaskState.TASK_STATE_WORKING)).toEqual({ after: undefined, change: undefined });
  });

  it('bounds a body: the answer to 64 KiB, a status message to 4 KiB', () => {
    const long = changeAmong(
      ids,
      [event(9, { event_type: 'react_end', status: 'completed', final_response: 'é'.repeat(100_000) })],
      TaskState.TASK_STATE_WORKING,
    ).change!;
    const answer = (JSON.parse(pushBody(long)) as { task: { artifacts: Array<{ parts: Array<{ text: string }> }> } })
      .task.artifacts[0]!.parts[0]!.text;
    expect(Buffer.byteLength(answer)).toBe(64 * 1024);
    const asking = changeAmong(
      ids,
      [event(9, { event_type: 'approval_requested', tool_name: 'transfer', arguments: { note: 'x'.repeat(10_000) } })],
      TaskState.TASK_STATE_WORKING,
    ).change!;
    const message = (
      JSON.parse(pushBody(asking)) as { statusUpdate: { status: { message: { parts: Array<{ text: string }> } } } }
    ).statusUpdate.status.message.parts[0]!.text;
    expect(Buffer.byteLength(message)).toBe(4 * 1024);
    expect(taskStateName(TaskState.TASK_STATE_INPUT_REQUIRED)).toBe('TASK_STATE_INPUT_REQUIRED');
  });
});

describe('A2A push notifications: configs', () => {
  const config = (fields: Partial<TaskPushNotificationConfig>): TaskPushNotificationConfig => ({
    tenant: '',
    id: 'hook',
    taskId: ids.taskId,
    url: 'https://example.com/hook',
    token: 'tok',
    authentication: undefined,
    ...fields,
  });

  it('takes a config within its limits (an id made when none), and refuses one past them, saying why', () => {
    expect(checkedTarget(config({}))).toEqual({
      id: 'hook',
      url: 'https://example.com/hook',
      token: 'tok',
      authentication: null,
    });
    expect(checkedTarget(config({ id: '' })).id).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      checkedTarget(config({ authentication: { scheme: 'Basic', credentials: 'dXNlcjpwYXNz' } })).authentication,
    ).toEqual({ scheme: 'Basic', credentials: 'dXNlcjpwYXNz' });
    const refused = (fields: Partial<TaskPushNotificationConfig>) => () => checkedTarget(config(fields));
    expect(refused({ url: 'file:///etc/passwd' })).toThrow('✖ an http:// or https:// URL\n  → at url');
    expect(refused({ url: 'http://[bad/' })).toThrow('url "http://[bad/" is not a URL');
    expect(refused({ token: 'a\r\nX-Injected: 1' })).toThrow('✖ visible ASCII characters\n  → at token');
    expect(refused({ token: 'x'.repeat(513) })).toThrow('<=512 characters\n  → at token');
    expect(refused({ authentication: { scheme: 'Bearer token', credentials: 'c' } })).toThrow(
      '✖ an HTTP authentication scheme\n  → at authentication.scheme',
    );
    expect(refused({ authentication: { scheme: 'Bearer', credentials: '' } })).toThrow(
      '→ at authentication.credentials',
    );
    expect(refused({ id: 'x'.repeat(101) })).toThrow('→ at id');
  });

  it("names a config's watcher and deliveries: one id per change of one config, the same on every attempt", () => {
    expect(a2aPushWatcherId(ids.taskId, 'hook')).toBe('ctx-1~abcd1234/a2a-push/hook');
    const first = a2aPushDeliveryId(ids.taskId, 'hook', 4);
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(a2aPushDeliveryId(ids.taskId, 'hook', 4)).toBe(first);
    expect(
      new Set([first, a2aPushDeliveryId(ids.taskId, 'hook', 5), a2aPushDeliveryId(ids.taskId, 'other', 4)]).size,
    ).toBe(3);
  });
});
