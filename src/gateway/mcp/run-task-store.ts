import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { RunHandle, RunSummary } from '../../client/patchloop-client';
import { isEndPhase, runPhaseOf, type AgentDefinitionInput } from '../../runtime';
import type { Principal } from '../principal';
import type { PrincipalRuns } from '../principal-runs';
import { abortAndWait } from '../run-abort';
import { closedCallResult } from './agent-tools';

/** Who an MCP connection serves: the principal its key stands for, its runs, and the agents it may call. */
export interface McpScope {
  principal: Principal;
  runs: PrincipalRuns;
  agents: ReadonlyMap<string, AgentDefinitionInput>;
}

/** The prefix of the runs an MCP call starts (its task id, or the run behind a call without a task). */
const MCP_RUN_PREFIX = 'mcp-';
/** How often a client should ask for a task's status (the run's own events drive everything else). */
const TASK_POLL_MS = 500;
/** The most tasks a `tasks/list` page holds, and how far pages reach (newest first). */
const LIST_PAGE = { size: 50, reach: 1000 };

/** A new MCP run's id. */
export function newMcpRunId(): string {
  return `${MCP_RUN_PREFIX}${randomUUID()}`;
}

/** A run as an MCP task: its phase, and what it waits for when it waits for the caller. */
function taskOf(summary: RunSummary, statusMessage?: string): Task {
  const phase = runPhaseOf(summary.status);
  return {
    taskId: summary.workflow_id,
    status: phase,
    ttl: null,
    createdAt: summary.started,
    lastUpdatedAt: summary.closed ?? new Date().toISOString(),
    pollInterval: TASK_POLL_MS,
    ...(statusMessage
      ? { statusMessage }
      : phase !== 'working' && phase !== 'completed'
        ? { statusMessage: `the run is ${summary.status.replace(/_/g, ' ')}` }
        : {}),
  };
}

/**
 * The MCP tasks of a principal, over runs (the Tasks extension's store): a task is the run an MCP call
 * started, its id the workflow id. Nothing is kept here: every answer is read from Temporal, so a task
 * outlives the session and the gateway process that created it, and any session of the same principal
 * finds it (a client back after a gateway restart). Another principal's runs, and runs not started by
 * an MCP call, are not found.
 */
export class RunTaskStore implements TaskStore {
  constructor(
    private readonly scope: McpScope,
    /** Told when a task is read while it waits for the caller's decision (to ask the client). */
    private readonly onInputRequired: (run: RunHandle, taskId: string) => Promise<string | undefined> = () =>
      Promise.resolve(undefined),
  ) {}

  /** The principal's MCP run with this id, or undefined. */
  async found(taskId: string): Promise<{ run: RunHandle; summary: RunSummary } | undefined> {
    if (!taskId.startsWith(MCP_RUN_PREFIX)) return undefined;
    const found = await this.scope.runs.find(this.scope.principal, taskId);
    // Not scoped by agent: a handoff changes the run's agent, and the task stays the caller's.
    if (!found || found.summary.type !== 'agentRun') return undefined;
    return { run: found.handle, summary: found.summary };
  }

  /** A task for the run the tool handler starts next with this id (the handler starts it before answering). */
  createTask(options: CreateTaskOptions): Promise<Task> {
    const now = new Date().toISOString();
    return Promise.resolve({
      taskId: newMcpRunId(),
      status: 'working',
      ttl: null,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: options.pollInterval ?? TASK_POLL_MS,
    });
  }

  async getTask(taskId: string): Promise<Task | null> {
    const found = await this.found(taskId);
    if (!found) return null;
    const message =
      runPhaseOf(found.summary.status) === 'input_required'
        ? await this.onInputRequired(found.run, taskId).catch(() => undefined)
        : undefined;
    return taskOf(found.summary, message);
  }

  /** The run holds its result: nothing to store. */
  storeTaskResult(): Promise<void> {
    return Promise.resolve();
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const found = await this.found(taskId);
    if (!found) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
    return closedCallResult(found.run);
  }

  /**
   * `cancelled` aborts the run (its transcript keeps what was done; a call that was running gets its
   * cancellation result) and answers once it has ended, within a bound. Other statuses are the run's
   * own to reach: nothing changes.
   */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled') return;
    const found = await this.found(taskId);
    if (!found) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
    if (isEndPhase(runPhaseOf(found.summary.status))) return;
    await abortAndWait(found.run, 'cancelled by the MCP client');
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const offset = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(offset) || offset < 0 || offset > LIST_PAGE.reach)
      throw new McpError(ErrorCode.InvalidParams, `cursor ${JSON.stringify(cursor)} is not one this server gave`);
    const listed = await this.scope.runs.list(this.scope.principal, {
      idPrefix: MCP_RUN_PREFIX,
      limit: offset + LIST_PAGE.size + 1,
    });
    const tasks = listed.filter((summary) => summary.type === 'agentRun');
    const more = tasks.length > offset + LIST_PAGE.size && offset + LIST_PAGE.size < LIST_PAGE.reach;
    return {
      tasks: tasks.slice(offset, offset + LIST_PAGE.size).map((summary) => taskOf(summary)),
      ...(more ? { nextCursor: String(offset + LIST_PAGE.size) } : {}),
    };
  }
}
