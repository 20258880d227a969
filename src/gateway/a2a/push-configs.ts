import { randomUUID } from 'node:crypto';
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { isGrpcServiceError, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import type { TaskIds } from '../../a2a/task-updates';
import type { PatchloopClient } from '../../client/patchloop-client';
import {
  A2A_PUSH_MAX_CONFIGS,
  A2aPushTarget,
  a2aPushWatcherId,
  a2aPushWatcherPrefix,
  hostOf,
  type A2aPushWatcherInputWire,
} from '../../runtime';

/** The memo field a watcher keeps its config in (read back by Get and List without a worker). */
const MEMO_FIELD = 'a2a_push_config';
/** Watcher executions a List reads at most (each config's newest counts; continued ones are skipped). */
const LIST_REACH = 200;
/** What a deleted config's watcher ended as. */
const DELETED = new Set(['CANCELLED', 'TERMINATED']);
/** How long Delete waits for a running watcher it cancelled to close (a Get or List right after must not find it). */
const DELETE_WAIT_MS = 15_000;
/** gRPC's status code for an execution the server no longer has. */
const GRPC_NOT_FOUND = 5;

/** A config as the A2A wire carries it. */
function wireOf(taskId: string, target: A2aPushTarget): TaskPushNotificationConfig {
  return {
    tenant: '',
    id: target.id,
    taskId,
    url: target.url,
    token: target.token,
    authentication: target.authentication ?? undefined,
  };
}

/**
 * A config a caller sent, checked against the limits (an id made when it has none); the protocol's
 * "invalid params" error with what is wrong otherwise.
 */
export function checkedTarget(config: TaskPushNotificationConfig): A2aPushTarget {
  const authentication =
    config.authentication && (config.authentication.scheme || config.authentication.credentials)
      ? { scheme: config.authentication.scheme, credentials: config.authentication.credentials }
      : null;
  const parsed = A2aPushTarget.safeParse({
    id: config.id || randomUUID(),
    url: config.url,
    token: config.token,
    authentication,
  });
  if (!parsed.success)
    throw new RequestMalformedError(`invalid push notification config: ${z.prettifyError(parsed.error)}`);
  try {
    new URL(parsed.data.url);
  } catch {
    throw new RequestMalformedError(`invalid push notification config: url ${JSON.stringify(config.url)} is not a URL`);
  }
  return parsed.data;
}

/**
 * A task's push-notification configs, each a watcher workflow (`a2aPushWatcher`, docs/gateway.md): its
 * input and memo hold the config, so creating one is starting it, reading them is describing or listing
 * them, and deleting one is cancelling it. The gateway keeps nothing: any gateway process answers, and a
 * restart loses none. Callers check first that the task is the principal's.
 */
export class PushConfigs {
  constructor(private readonly client: PatchloopClient) {}

  /**
   * Starts the watcher of a config on a task in `state` (its wire name); refused past the limits. The
   * watcher follows the run from `after`: -1 for a task that goes on (it starts from the run's newest
   * event), 0 for a task this request has just started (from its first event; it has no other config).
   */
  async create(ids: TaskIds, state: string, target: A2aPushTarget, after = -1): Promise<TaskPushNotificationConfig> {
    if (after < 0) {
      const existing = await this.list(ids.taskId);
      if (existing.some((config) => config.id === target.id)) throw this.taken(ids.taskId, target.id);
      if (existing.length >= A2A_PUSH_MAX_CONFIGS)
        throw new RequestMalformedError(
          `task ${ids.taskId} has ${existing.length} push notification configs, the most a task may have: delete one first`,
        );
    }
    const input: A2aPushWatcherInputWire = {
      task_id: ids.taskId,
      context_id: ids.contextId,
      config: target,
      after,
      state,
    };
    try {
      await this.client.temporal.workflow.start('a2aPushWatcher', {
        workflowId: a2aPushWatcherId(ids.taskId, target.id),
        taskQueue: this.client.taskQueue,
        args: [input],
        memo: { [MEMO_FIELD]: target },
        staticSummary: `push notifications of task ${ids.taskId} to ${hostOf(target.url)}`,
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) throw this.taken(ids.taskId, target.id);
      throw error;
    }
    return wireOf(ids.taskId, target);
  }

  private taken(taskId: string, id: string): Error {
    return new RequestMalformedError(
      `task ${taskId} already has a push notification config ${JSON.stringify(id)}: delete it first, or use another id`,
    );
  }

  /** One config of the task; TaskNotFound when it has none with that id (or it was deleted). */
  async get(taskId: string, id: string): Promise<TaskPushNotificationConfig> {
    const description = await this.describe(taskId, id);
    const target = description?.memo?.[MEMO_FIELD] as A2aPushTarget | undefined;
    if (!description || DELETED.has(description.status.name) || !target)
      throw new TaskNotFoundError(`no push notification config ${JSON.stringify(id)} on task ${taskId}`);
    return wireOf(taskId, target);
  }

  /** The task's configs (those not deleted), oldest first. */
  async list(taskId: string): Promise<TaskPushNotificationConfig[]> {
    const prefix = a2aPushWatcherPrefix(taskId);
    // The task is one the caller may see (checked before); a run started outside the gateway may have any id.
    if (/['"\\]/.test(prefix))
      throw new RequestMalformedError(`task ${taskId} has quotes in its id: it cannot have push notification configs`);
    const query = `WorkflowType = 'a2aPushWatcher' AND WorkflowId STARTS_WITH '${prefix}' AND ExecutionStatus != 'ContinuedAsNew'`;
    const newest = new Map<string, { status: string; target: A2aPushTarget | undefined; started: number }>();
    let read = 0;
    for await (const execution of this.client.temporal.workflow.list({ query })) {
      const seen = newest.get(execution.workflowId);
      if (!seen || seen.started < execution.startTime.getTime())
        newest.set(execution.workflowId, {
          status: execution.status.name,
          target: execution.memo?.[MEMO_FIELD] as A2aPushTarget | undefined,
          started: execution.startTime.getTime(),
        });
      if (++read >= LIST_REACH) break;
    }
    return [...newest.values()]
      .filter((one) => !DELETED.has(one.status) && one.target)
      .sort((a, b) => a.started - b.started)
      .map((one) => wireOf(taskId, one.target!));
  }

  /**
   * Deletes a config: its watcher is cancelled (nothing more is sent), or, when it has ended, its record
   * is deleted. Deleting one the task does not have changes nothing.
   */
  async delete(taskId: string, id: string): Promise<void> {
    const description = await this.describe(taskId, id);
    if (!description || DELETED.has(description.status.name)) return;
    const handle = this.client.temporal.workflow.getHandle(a2aPushWatcherId(taskId, id));
    if (description.status.name === 'RUNNING') {
      await handle.cancel();
      // Answered once the watcher has closed as cancelled, so that Get and List no longer find it; a
      // watcher whose worker is down closes when one is back, and Delete answers at the bound meanwhile.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        handle.result().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, DELETE_WAIT_MS))),
      ]);
      clearTimeout(timer);
      return;
    }
    await this.deleteEnded(description.workflowId, description.runId);
  }

  /**
   * Deletes an ended watcher's record, answered once a Get no longer finds it. The server deletes in the
   * background, and may drop a delete asked while the close's own tasks are pending: asked again (it is
   * idempotent) every second until the record is gone, within the bound.
   */
  private async deleteEnded(workflowId: string, runId: string): Promise<void> {
    const deadline = Date.now() + DELETE_WAIT_MS;
    while (Date.now() < deadline) {
      try {
        await this.client.temporal.workflowService.deleteWorkflowExecution({
          namespace: this.client.temporal.options.namespace,
          workflowExecution: { workflowId, runId },
        });
      } catch (error) {
        if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) return;
        throw error;
      }
      for (let check = 0; check < 10; check += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (!(await this.describeRun(workflowId, runId))) return;
      }
    }
  }

  private async describeRun(workflowId: string, runId?: string) {
    try {
      return await this.client.temporal.workflow.getHandle(workflowId, runId).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  private describe(taskId: string, id: string) {
    return this.describeRun(a2aPushWatcherId(taskId, id));
  }
}
