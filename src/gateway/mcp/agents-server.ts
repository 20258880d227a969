import { InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type CreateTaskResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { describeEvent } from '../../client/follow';
import { RunHandle } from '../../client/patchloop-client';
import type { AgentRunInputWire, RunEvent } from '../../runtime';
import { RateLimited } from '../rate-limits';
import { runEvents } from '../run-events';
import { agentTool, closedCallResult, runInputOf } from './agent-tools';
import { ApprovalAsks } from './approval-asks';
import { newMcpRunId, RunTaskStore, type McpScope } from './run-task-store';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The longest a progress message is (a line of the run's events). */
const PROGRESS_MESSAGE_CHARS = 500;
/** Tasks one connection follows for notifications at once; more are read by the client alone. */
const MAX_FOLLOWED_TASKS = 100;
/** Messages queued for one task's `tasks/result` (approval forms) at most. */
const MAX_TASK_QUEUE = 100;
/** How often a call answered in the call looks for approvals it has not asked about (a sub-agent's, one dismissed). */
const APPROVAL_LOOK_MS = 2_000;
/** How often a followed task's status is looked at besides its events. */
const STATUS_LOOK_MS = 1_000;

/** A tool error the caller's model reads. */
function toolError(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** A progress notification of a run's event (`describeEvent`'s line), or undefined for an event without one. */
function progressOf(event: RunEvent, progressToken: string | number): ServerNotification | undefined {
  const line = describeEvent(event)?.trim();
  if (!line) return undefined;
  return {
    method: 'notifications/progress',
    params: { progressToken, progress: event.seq, message: line.slice(0, PROGRESS_MESSAGE_CHARS) },
  };
}

/**
 * The MCP server of one connection (a Streamable HTTP session, or a stdio client): every agent the scope
 * allows is a tool taking `{input, context?}`. A call starts a run; without a task it answers when the
 * run ends (progress notifications from its events, its approvals asked by elicitation), with a task
 * (`params.task`) it answers the task at once and the Tasks extension's `tasks/get`, `tasks/result`,
 * `tasks/list` and `tasks/cancel` read and act on the run (`RunTaskStore`). docs/mcp-server.md.
 */
export function agentsMcpServer(scope: McpScope): Server {
  const closed = new AbortController();
  // The asks go through the server, made next (the store needs them first; they ask only later).
  const asks: ApprovalAsks = new ApprovalAsks((): Server => server);
  const store: RunTaskStore = new RunTaskStore(scope, (run, taskId) => asks.askForTask(run, taskId));
  const server: Server = new Server(
    { name: 'patchloop', version: '1.0.0' },
    {
      capabilities: { tools: {}, logging: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: store,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
      maxTaskQueueSize: MAX_TASK_QUEUE,
      instructions:
        'Each tool is a patchloop agent: a call starts a durable run. Ask for a task (params.task) for a long run; it survives disconnects and gateway restarts.',
    },
  );
  server.onclose = () => closed.abort();
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...scope.agents.values()].map(agentTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const agent = scope.agents.get(request.params.name);
    if (!agent) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    const made = runInputOf(agent.name, request.params.arguments);
    // A call for a task answers a task or a protocol error: a tool result there is no valid answer.
    if (made.problem !== undefined) {
      if (request.params.task) throw new McpError(ErrorCode.InvalidParams, made.problem);
      return toolError(made.problem);
    }
    if (request.params.task) return startTask(made.input, request, extra);
    return answerInCall(made.input, request, extra);
  });

  /** Starts the run, or says why not: a tool error for a call, a protocol error for a task. */
  async function start(
    input: AgentRunInputWire,
    workflowId: string,
    forTask: boolean,
  ): Promise<RunHandle | CallToolResult> {
    try {
      return await scope.runs.start(scope.principal, input, { workflowId });
    } catch (error) {
      if (!(error instanceof RateLimited)) throw error;
      const why = `rate limited: ${error.message} (try again in ${Math.ceil(error.retryAfterSeconds)} s)`;
      if (forTask) throw new McpError(ErrorCode.InvalidRequest, why);
      return toolError(why);
    }
  }

  let followed = 0;

  /** A task-augmented call: the run starts, the task is the answer; the run's changes follow as notifications. */
  async function startTask(input: AgentRunInputWire, request: CallToolRequest, extra: Extra) {
    const task = await extra.taskStore!.createTask(request.params.task!);
    const run = await start(input, task.taskId, true);
    if (!(run instanceof RunHandle)) return run;
    if (followed < MAX_FOLLOWED_TASKS) {
      followed += 1;
      void followTask(run, task.taskId, request.params._meta?.progressToken)
        .catch(() => undefined)
        .finally(() => (followed -= 1));
    }
    return { task } satisfies CreateTaskResult;
  }

  /**
   * The run's status changes as `notifications/tasks/status` (and its events as progress, when the call
   * had a progress token) while the connection lasts. Only a courtesy: a client reads the task itself.
   */
  async function followTask(run: RunHandle, taskId: string, progressToken: string | number | undefined) {
    let last = 'working';
    // One look at a time (a timer's and an event's would both see a change and tell it twice).
    let looking = Promise.resolve();
    const look = async () => {
      const task = await store.getTask(taskId);
      if (!task || task.status === last) return;
      last = task.status;
      await server.notification({ method: 'notifications/tasks/status', params: task });
    };
    const changed = () => (looking = looking.then(look).catch(() => undefined));
    // The run's status (a search attribute) may trail its events: looked at again every second too.
    const timer = setInterval(() => void changed(), STATUS_LOOK_MS);
    try {
      for await (const event of runEvents(run, 0, closed.signal)) {
        const progress = progressToken === undefined ? undefined : progressOf(event, progressToken);
        // On the session's own stream (not queued for tasks/result, which drops what is left when it answers).
        if (progress) await server.notification(progress);
        if (['approval_requested', 'approval_decided', 'react_end'].includes(event.event_type)) await changed();
      }
    } finally {
      clearInterval(timer);
    }
    if (!closed.signal.aborted) await changed();
  }

  /**
   * A call without a task: answered when the run ends, its events as progress (with a progress token),
   * its approvals asked by elicitation on the call's stream. A client that cancels the call aborts the
   * run; a connection that closes does not (the run goes on; `patchloop show` finds it).
   */
  async function answerInCall(input: AgentRunInputWire, request: CallToolRequest, extra: Extra) {
    const run = await start(input, newMcpRunId(), false);
    if (!(run instanceof RunHandle)) return run;
    const progressToken = request.params._meta?.progressToken;
    // At once for the run's own approvals; every few seconds for a sub-agent's and for one dismissed.
    const look = setInterval(() => asks.askInCall(run, extra), APPROVAL_LOOK_MS);
    try {
      for await (const event of runEvents(run, 0, extra.signal)) {
        const progress = progressToken === undefined ? undefined : progressOf(event, progressToken);
        if (progress) await extra.sendNotification(progress).catch(() => undefined);
        if (event.event_type === 'approval_requested') asks.askInCall(run, extra);
      }
    } finally {
      clearInterval(look);
    }
    if (extra.signal.aborted) {
      // Aborted by the client's cancellation, or by the connection closing: only the first aborts the run.
      await new Promise((resolve) => setImmediate(resolve));
      if (!closed.signal.aborted) await run.abort('the MCP client cancelled the call').catch(() => undefined);
      throw new McpError(ErrorCode.ConnectionClosed, 'the call was cancelled');
    }
    return closedCallResult(run);
  }

  return server;
}
