import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { checkedContextId, contextOf, newContextId, newTaskId } from '../../src/gateway/a2a/task-ids';
import { isFinal, runStatusOf, taskStateOf } from '../../src/a2a/task-states';
import { endUpdates } from '../../src/a2a/task-updates';

describe('A2A tasks as runs', () => {
  it("a task's id holds its context; a run started otherwise is its own context", () => {
    const context = newContextId();
    expect(contextOf(newTaskId(context))).toBe(context);
    expect(contextOf('run-1234')).toBe('run-1234');
    expect(checkedContextId('billing.2026_a-b')).toBe('billing.2026_a-b');
    for (const bad of ['', "x' OR '1'='1", 'a~b', 'x'.repeat(101)])
      expect(() => checkedContextId(bad)).toThrow(/a contextId is 1 to 100 letters/);
  });

  it("maps every run state to a task state, and back for ListTasks' filter", () => {
    const states = Object.fromEntries(
      [
        'running',
        'waiting',
        'awaiting_budget',
        'awaiting_approval',
        'completed',
        'aborted',
        'terminated',
        'failed',
        'budget_exhausted',
        'timed out',
      ].map((status) => [status, TaskState[taskStateOf(status)]]),
    );
    expect(states).toEqual({
      running: 'TASK_STATE_WORKING',
      waiting: 'TASK_STATE_WORKING',
      awaiting_budget: 'TASK_STATE_WORKING',
      awaiting_approval: 'TASK_STATE_INPUT_REQUIRED',
      completed: 'TASK_STATE_COMPLETED',
      aborted: 'TASK_STATE_CANCELED',
      terminated: 'TASK_STATE_CANCELED',
      failed: 'TASK_STATE_FAILED',
      budget_exhausted: 'TASK_STATE_FAILED',
      'timed out': 'TASK_STATE_FAILED',
    });
    for (const state of [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED])
      expect(taskStateOf(runStatusOf(state)!)).toBe(state);
    expect(runStatusOf(TaskState.TASK_STATE_UNSPECIFIED)).toBeUndefined();
    expect([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_FAILED].map(isFinal)).toEqual([false, true]);
  });

  it('a run that ends gives its answer (when completed), then its final state with the reason', () => {
    const ids = { taskId: 'ctx-1~a', contextId: 'ctx-1' };
    const kinds = (status: string, answer: string, reason?: string) =>
      endUpdates(ids, { status, answer, ...(reason ? { reason } : {}) }, 't', 'm').map((update) =>
        update.payload?.$case === 'statusUpdate'
          ? `${TaskState[update.payload.value.status!.state]} ${update.payload.value.status!.message?.parts[0]?.content?.value ?? ''}`
          : `artifact ${update.payload?.$case === 'artifactUpdate' ? update.payload.value.artifact!.parts[0]!.content!.value : ''}`,
      );
    expect(kinds('completed', 'Paris.')).toEqual(['artifact Paris.', 'TASK_STATE_COMPLETED ']);
    expect(kinds('aborted', '', 'stop')).toEqual(['TASK_STATE_CANCELED stop']);
    expect(kinds('aborted', '')).toEqual(['TASK_STATE_CANCELED canceled']);
    expect(kinds('failed', '', 'the model is gone')).toEqual(['TASK_STATE_FAILED the model is gone']);
    expect(kinds('budget_exhausted', '')).toEqual(['TASK_STATE_FAILED budget_exhausted']);
  });
});
