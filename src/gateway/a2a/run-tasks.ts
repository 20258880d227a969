import {
  Role,
  TaskState,
  type AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTaskPushNotificationConfigsResponse,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  RequestMalformedError,
  RestUnsupportedOperationError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { RunHandle, RunSummary } from '../../client/patchloop-client';
import type { A2aPushTarget, AgentDefinitionInput, AgentRunInputWire } from '../../runtime';
import type { PrincipalRuns } from '../principal-runs';
import { RateLimited, retryAfter } from '../rate-limits';
import { conversationAfter } from '../conversation';
import { abortAndWait } from '../run-abort';
import { callerOf, type Caller } from './caller';
import { closedRunUpdates } from './run-outcome';
import { checkedTarget, PushConfigs } from './push-configs';
import { runUpdates } from './run-updates';
import { checkedContextId, contextOf, newContextId, newTaskId } from './task-ids';
import { taskStateName } from '../../a2a/push-changes';
import { isFinal, runStatusOf, taskStateOf } from '../../a2a/task-states';
import { agentMessage, applied, approvalText, endsStream, stateOf, type TaskIds } from '../../a2a/task-updates';

/** The most tasks one `ListTasks` page holds, and how far pages reach (the visibility store is read from the newest). */
const LIST_PAGE = { default: 50, most: 100, reach: 1000 };

/** The text of a message's text parts; a message without one is refused. */
function textOf(message: Message | undefined): string {
  const text = (message?.parts ?? [])
    .flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : []))
    .join('\n');
  if (text.trim() === '') throw new RequestMalformedError('the message needs a text part (patchloop agents read text)');
  return text;
}

function taskOfSummary(summary: RunSummary): Task {
  const taskId = summary.workflow_id;
  return {
    id: taskId,
    contextId: contextOf(taskId),
    status: { state: taskStateOf(summary.status), message: undefined, timestamp: summary.closed ?? summary.started },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

/**
 * A start over the principal's limits, in the binding's words: `Retry-After` on the response, and HTTP 429
 * on HTTP+JSON (JSON-RPC carries its errors in the body, with status 200).
 */
function refusedForRate(caller: Caller, error: RateLimited): Error {
  caller.response.set(...retryAfter(error));
  const message = `rate limited: ${error.message}`;
  return caller.binding === 'HTTP+JSON'
    ? new RestUnsupportedOperationError({ message, statusCode: 429 })
    : new UnsupportedOperationError(message);
}

/** A task's updates folded into its task from the first (the task itself). */
function taskFrom(first: Task, updates: StreamResponse[]): Task {
  return updates.reduce(applied, first);
}

/**
 * The A2A request handler of one patchloop agent, over runs: a task is a run (its id the workflow id),
 * started, read and acted on for the caller's principal through `PrincipalRuns`. It keeps nothing: every
 * answer is read from Temporal, so any gateway process answers any request.
 */
export class RunTasks implements A2ARequestHandler {
  private readonly pushes: PushConfigs;

  constructor(
    private readonly agent: AgentDefinitionInput,
    private readonly runs: PrincipalRuns,
    private readonly card: AgentCard,
  ) {
    this.pushes = new PushConfigs(runs.client);
  }

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new UnsupportedOperationError('this agent has no extended card'));
  }

  /** The caller's task of this agent with this id, or TaskNotFound (none, another principal's, another agent's). */
  private async found(caller: Caller, taskId: string): Promise<{ run: RunHandle; summary: RunSummary; ids: TaskIds }> {
    const found = await this.runs.find(caller.principal, taskId);
    if (!found || found.summary.type !== 'agentRun' || (found.summary.agent ?? this.agent.name) !== this.agent.name)
      throw new TaskNotFoundError(`no task ${taskId}`);
    return { run: found.handle, summary: found.summary, ids: { taskId, contextId: contextOf(taskId) } };
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    const { run, summary, ids } = await this.found(callerOf(context), params.id);
    return this.current(run, summary, ids);
  }

  /** The task as it stands: a closed run's from its result; a waiting one's with the calls it waits on. */
  private async current(run: RunHandle, summary: RunSummary, ids: TaskIds): Promise<Task> {
    const task = taskOfSummary(summary);
    const state = task.status!.state;
    if (summary.closed !== null) return taskFrom(task, await closedRunUpdates(run, ids));
    if (state !== TaskState.TASK_STATE_INPUT_REQUIRED) return task;
    const pending = await run.pendingApprovals().catch(() => []);
    if (pending.length === 0) return task;
    return {
      ...task,
      status: { ...task.status!, message: agentMessage(ids, `${ids.taskId}:pending`, approvalText(pending)) },
    };
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const caller = callerOf(context);
    const pageSize = Math.min(LIST_PAGE.most, Math.max(1, params.pageSize ?? LIST_PAGE.default));
    const offset = params.pageToken === '' ? 0 : Number(params.pageToken);
    if (!Number.isInteger(offset) || offset < 0 || offset > LIST_PAGE.reach)
      throw new RequestMalformedError(`pageToken ${JSON.stringify(params.pageToken)} is not one this server gave`);
    const contextId = params.contextId === '' ? undefined : checkedContextId(params.contextId);
    const status = runStatusOf(params.status);
    const listed = await this.runs.list(caller.principal, {
      agent: this.agent.name,
      limit: offset + pageSize + 1,
      ...(status ? { status } : {}),
      ...(contextId ? { text: contextId } : {}),
    });
    const tasks = listed.filter(
      (summary) => summary.type === 'agentRun' && (!contextId || contextOf(summary.workflow_id) === contextId),
    );
    const page = tasks.slice(offset, offset + pageSize);
    const more = tasks.length > offset + pageSize && offset + pageSize < LIST_PAGE.reach;
    return {
      tasks: page.map(taskOfSummary),
      nextPageToken: more ? String(offset + pageSize) : '',
      pageSize: page.length,
      totalSize: offset + page.length + (more ? 1 : 0),
    };
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const { run, summary, ids } = await this.found(callerOf(context), params.id);
    const before = await this.current(run, summary, ids);
    const state = before.status!.state;
    if (state === TaskState.TASK_STATE_CANCELED) return before;
    if (isFinal(state)) throw new TaskNotCancelableError(`task ${params.id} has ended (${TaskState[state]})`);
    await abortAndWait(run, 'canceled by the A2A client');
    const after = await this.runs.find(callerOf(context).principal, params.id);
    return after ? this.current(run, after.summary, ids) : before;
  }

  resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse> {
    return this.follow(callerOf(context), params.id);
  }

  /** The current task, then its updates until a final state: the snapshot and the cursor are read at once. */
  private async *follow(
    caller: Caller,
    taskId: string,
    act?: (run: RunHandle, task: Task) => Promise<void>,
  ): AsyncGenerator<StreamResponse> {
    const { run, summary, ids } = await this.found(caller, taskId);
    if (summary.closed !== null) {
      if (act) await act(run, await this.current(run, summary, ids));
      yield { payload: { $case: 'task', value: await this.current(run, summary, ids) } };
      return;
    }
    // One query answers the state and the newest event: later updates follow from that event's seq.
    const status = await this.whenAnswered(caller, () => run.status(0, 1, 1));
    const base = taskOfSummary({ ...summary, status: status.state });
    const task =
      status.pending_approvals.length > 0
        ? {
            ...base,
            status: {
              ...base.status!,
              message: agentMessage(ids, `${taskId}:pending`, approvalText(status.pending_approvals)),
            },
          }
        : base;
    if (act) await act(run, task);
    yield { payload: { $case: 'task', value: task } };
    if (isFinal(task.status!.state)) return;
    yield* runUpdates(run, ids, status.events.at(-1)?.seq ?? 0, caller.gone);
  }

  /** A query's answer, asked again while no worker answers (one was killed and another takes over). */
  private async whenAnswered<T>(caller: Caller, ask: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await ask();
      } catch (error) {
        if (caller.gone.aborted) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const caller = callerOf(context);
    const message = params.message;
    const text = textOf(message);
    const push = params.configuration?.taskPushNotificationConfig;
    const target = push ? checkedTarget(push) : undefined;
    if (message?.taskId)
      return this.follow(caller, message.taskId, async (run, task) => {
        if (target) {
          const ids = { taskId: task.id, contextId: task.contextId };
          await this.pushes.create(ids, this.notifiable(task.id, task.status!.state), target);
        }
        await this.answer(run, task, text);
      });
    return this.started(caller, message!, text, target);
  }

  /**
   * A new task: the run starts (continuing its context's conversation), its push-notification config's
   * watcher when the message names one (from the task's first event on), then its updates.
   */
  private async *started(
    caller: Caller,
    message: Message,
    text: string,
    push: A2aPushTarget | undefined,
  ): AsyncGenerator<StreamResponse> {
    const contextId = message.contextId ? checkedContextId(message.contextId) : newContextId();
    const history = await this.conversation(caller, contextId);
    const taskId = newTaskId(contextId);
    let run: RunHandle;
    try {
      run = await this.runs.start(
        caller.principal,
        { agent: this.agent.name, input: text, ...(history.length > 0 ? { history } : {}) },
        { workflowId: taskId },
      );
    } catch (error) {
      throw error instanceof RateLimited ? refusedForRate(caller, error) : error;
    }
    const ids = { taskId, contextId };
    if (push) await this.pushes.create(ids, taskStateName(TaskState.TASK_STATE_SUBMITTED), push, 0);
    const sent: Message = { ...message, taskId, contextId, role: Role.ROLE_USER };
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [sent],
      metadata: undefined,
    };
    yield { payload: { $case: 'task', value: task } };
    yield* runUpdates(run, ids, 0, caller.gone);
  }

  /**
   * The conversation a context holds so far: the transcript of its newest task, which must have ended
   * (a task still going on takes messages by its task id). None for a new context.
   */
  private async conversation(caller: Caller, contextId: string): Promise<NonNullable<AgentRunInputWire['history']>> {
    // Task ids are `CONTEXT~SUFFIX`: the newest run whose id starts so is the context's newest task.
    const [newest] = await this.runs.list(caller.principal, {
      agent: this.agent.name,
      idPrefix: `${contextId}~`,
      limit: 1,
    });
    if (!newest) return [];
    if (newest.closed === null)
      throw new UnsupportedOperationError(
        `task ${newest.workflow_id} of context ${contextId} is still going on: send to its taskId, or cancel it first`,
      );
    const found = await this.runs.find(caller.principal, newest.workflow_id);
    // A transcript is in the chat shape `history` takes (the run checks it before it starts).
    return found ? ((await conversationAfter(found.handle)) as NonNullable<AgentRunInputWire['history']>) : [];
  }

  /** A message on a task that goes on: the decision it waits for, or a message for the run to read. */
  private async answer(run: RunHandle, task: Task, text: string): Promise<void> {
    const state = task.status!.state;
    if (isFinal(state))
      throw new UnsupportedOperationError(
        `task ${task.id} has ended (${TaskState[state]}): send a message with its contextId to go on in a new task`,
      );
    if (state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
      await run.submit(text);
      return;
    }
    const decision = /^\s*(approve|reject)\b[\s:]*([\s\S]*)$/i.exec(text);
    if (!decision)
      throw new RequestMalformedError(`the task waits for a decision: answer "approve" or "reject: REASON"`);
    const approve = decision[1]!.toLowerCase() === 'approve';
    const reason = decision[2]!.trim() || (approve ? 'approved by the A2A client' : 'rejected by the A2A client');
    for (const call of await run.pendingApprovals())
      await (approve
        ? run.approve(call.tool_call_id, reason, call.workflow_id)
        : run.reject(call.tool_call_id, reason, call.workflow_id));
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const stream = this.sendMessageStream(params, context);
    const first = await stream.next();
    if (first.done || first.value.payload?.$case !== 'task') throw new Error('a task stream began without its task');
    let task = first.value.payload.value;
    if (params.configuration?.returnImmediately) {
      await stream.return(undefined);
      return task;
    }
    // Blocking: until the task ends or waits for the client's input.
    for await (const update of stream) {
      task = taskFrom(task, [update]);
      if (endsStream(update) || stateOf(update) === TaskState.TASK_STATE_INPUT_REQUIRED) break;
    }
    return task;
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const target = checkedTarget(params);
    const { summary, ids } = await this.found(callerOf(context), params.taskId);
    return this.pushes.create(ids, this.notifiable(ids.taskId, taskStateOf(summary.status)), target);
  }

  /** The state a task's new config starts from; a task that ended has no change left to notify. */
  private notifiable(taskId: string, state: TaskState): string {
    if (isFinal(state))
      throw new UnsupportedOperationError(
        `task ${taskId} has ended (${TaskState[state]}): no change is left to notify`,
      );
    return taskStateName(state);
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    await this.found(callerOf(context), params.taskId);
    return this.pushes.get(params.taskId, params.id);
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    await this.found(callerOf(context), params.taskId);
    return { configs: await this.pushes.list(params.taskId), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    await this.found(callerOf(context), params.taskId);
    await this.pushes.delete(params.taskId, params.id);
  }
}
