import {
  Client,
  Connection,
  ApplicationFailure,
  QueryNotRegisteredError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
  type WorkflowHandle,
} from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { SearchAttributePair, UpdateDefinition } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { z } from 'zod';
import type { LlmFunction } from '../functions/define-llm-function';
import { chainEvents, countBillableActions, type BillableActions } from './billable-actions';
import type { JsonValue, Message } from '../context';
import type {
  EventDelivered,
  AgentRunInputWire,
  NotifyDelivered,
  ApprovalAccepted,
  BudgetExtension,
  PendingApproval,
  AgentRunResult,
  ChatSessionInputWire,
  ChatSessionResult,
  EventPage,
  RunEvent,
  RunStatus,
  TurnReply,
  UnprocessedMessage,
} from '../runtime';
import {
  FailureType,
  abortSignal,
  approveUpdate,
  deliverEventUpdate,
  eventsQuery,
  PATCHLOOP_SEARCH_ATTRIBUTES as keys,
  extendBudgetUpdate,
  closeSignal,
  nextRequestQuery,
  pendingApprovalsQuery,
  sendUpdate,
  statusQuery,
  transcriptPageQuery,
  transcriptQuery,
  userMessageSignal,
  userMessageUpdate,
  type UserMessageAccepted,
} from '../common';
import { ForkSource, forkPoint, forkUnitOf, notifierWorkflowId, type ForkUnit, type ToolRecordings } from '../runtime';

type ToolRecordingsWire = Omit<ToolRecordings, 'fallthrough'> & { fallthrough?: boolean };
import { connectionOptions, type PatchloopConfig } from '../config/environment';
import { patchloopDataConverter } from '../storage/data-converter';
import type { ChunkTransport } from '../streaming/chunk';
import { RedisChunkTransport } from '../streaming/redis-transport';
import { PatchloopSchedules } from './schedules';
import { workflowResult } from './workflow-result';

/** A typed client for patchloop runs; anything it does can also be done with the `temporal` CLI. */
export class PatchloopClient {
  /** Schedules on Temporal Schedules whose fires run this task queue's agents (docs/schedules.md). */
  readonly schedules: PatchloopSchedules;
  private searchAttributesKnown?: Promise<Set<string>>;

  constructor(
    readonly temporal: Client,
    readonly taskQueue: string,
    /** The shared token stream (Redis) when configured: followers read chunks there, not from workers. */
    readonly chunks?: ChunkTransport & { close?(): Promise<void> },
  ) {
    this.schedules = new PatchloopSchedules(temporal, taskQueue);
  }

  static async connect(
    config: Pick<
      PatchloopConfig,
      'temporalAddress' | 'temporalConnection' | 'namespace' | 'taskQueue' | 'payloadStorage' | 'encryption' | 'redis'
    >,
  ): Promise<PatchloopClient> {
    return PatchloopClient.on(await Connection.connect(connectionOptions(config)), config);
  }

  /** A client on an open connection, with the data converter every party of a deployment shares. */
  static on(
    connection: Connection,
    config: Pick<PatchloopConfig, 'namespace' | 'taskQueue' | 'payloadStorage' | 'encryption' | 'redis'>,
  ): PatchloopClient {
    const dataConverter = patchloopDataConverter(config.payloadStorage, config.encryption);
    return new PatchloopClient(
      new Client({ connection, namespace: config.namespace, dataConverter }),
      config.taskQueue,
      // Quiet: a follower learns of a Redis outage from its reads (and retries), not from log lines.
      config.redis
        ? new RedisChunkTransport(config.redis, { encryption: config.encryption, logger: { warn: () => undefined } })
        : undefined,
    );
  }

  /** Starts workflow `agentRun`; the id defaults to `run-<uuid>`. */
  async start(input: AgentRunInputWire, options: StartOptions = {}): Promise<RunHandle> {
    // The UI's summary line: the agent and the start of the question (never more than 200 characters of it).
    const summary = `${input.agent}: ${oneLine(input.input, 200)}`;
    const workflowId = options.workflowId ?? `run-${randomUUID()}`;
    return new RunHandle(await this.startWorkflow('agentRun', workflowId, input, summary, options), this.chunks);
  }

  run(workflowId: string): RunHandle {
    return new RunHandle(this.temporal.workflow.getHandle(workflowId), this.chunks);
  }

  /**
   * Starts a fork of a run (docs/fork-and-evals.md): a new `agentRun` whose context is exactly the
   * original's before its model request at iteration `at`, so that its first request is the original's
   * byte for byte unless an override changes it; no tool runs again. A session forks as a session at its
   * turn `at` (1 for the first): the turns before it, and that turn's message answered again (or
   * `message` instead); its handle is a `SessionHandle`. The fork records where it came from
   * (`fork_from` in its input, `PatchloopForkOf`, a memo that `forksOf` lists). The id defaults to
   * `fork-<uuid>`.
   */
  async fork(workflowId: string, options: ForkOptions): Promise<RunHandle> {
    const { workflowId: id, principal, toolRecordings, ...changes } = options;
    const source = ForkSource.parse({ workflow_id: workflowId, ...changes });
    const original = await this.temporal.workflow.getHandle(workflowId).describe();
    const session = original.type === 'chatSession';
    if (original.type !== 'agentRun' && !session)
      throw new ForkRefusedError(
        `${workflowId} is a ${original.type}: only agentRun runs and chatSession sessions fork`,
      );
    if (session && source.at < 1)
      throw new ForkRefusedError(`a session forks at a turn: 1 for its first, not ${source.at}`);
    if (session && toolRecordings) throw new ForkRefusedError('a session forks with live tools only');
    const agent = source.agent ?? original.typedSearchAttributes.get(keys.agent) ?? 'fork';
    const forkId = id ?? `fork-${randomUUID()}`;
    const unit = forkUnitOf(original.type);
    const summary = `${agent}: fork of ${workflowId} at ${forkPoint(source.at, unit)}`;
    const input = session
      ? { agent, fork_from: source }
      : {
          agent,
          input: source.message ?? '',
          fork_from: source,
          ...(toolRecordings ? { tool_recordings: toolRecordings } : {}),
        };
    const handle = await this.startWorkflow(session ? 'chatSession' : 'agentRun', forkId, input, summary, {
      ...(principal !== undefined ? { principal } : {}),
      attributes: (await this.searchAttributesPresent(keys.forkOf)) ? [{ key: keys.forkOf, value: workflowId }] : [],
      memo: { [FORK_MEMO]: { workflow_id: workflowId, at: source.at, ...(session ? { unit } : {}) } },
    });
    return session ? new SessionHandle(handle, this.chunks) : new RunHandle(handle, this.chunks);
  }

  /**
   * A fork, then the original aborted with a reason that names the fork (when it still runs): the run
   * goes on from iteration `at` as the fork. A session's original is closed too (an abort ends its
   * current turn only): its turns already queued are answered, and it takes no more.
   */
  async rewind(workflowId: string, options: ForkOptions): Promise<{ fork: RunHandle; aborted: boolean }> {
    const fork = await this.fork(workflowId, options);
    // Only a fork that has its state goes on for the original: one that cannot read it fails here first.
    await untilForked(fork);
    const original = this.session(workflowId);
    if ((await original.workflow.describe()).status.name !== 'RUNNING') return { fork, aborted: false };
    const point = forkPoint(options.at, fork instanceof SessionHandle ? 'turn' : 'iteration');
    await original.abort(`rewound to ${point}: it goes on as ${fork.workflowId}`);
    if (fork instanceof SessionHandle) await original.close();
    return { fork, aborted: true };
  }

  /** The forks of a run, newest first: their ids, where they forked, and how they stand. */
  async forksOf(workflowId: string, limit = 100): Promise<ForkSummary[]> {
    const forks: ForkSummary[] = [];
    const query = `${keys.forkOf.name} = ${quoted(workflowId)}`;
    for await (const execution of this.temporal.workflow.list({ query })) {
      const memo = forkMemoOf(execution.memo);
      forks.push({ ...runSummaryOf(execution), at: memo?.at ?? null, unit: memo?.unit ?? 'iteration' });
      if (forks.length >= limit) break;
    }
    return forks;
  }

  /** Starts workflow `chatSession`; the id defaults to `session-<uuid>`. */
  async startSession(
    input: ChatSessionInputWire,
    options: Omit<StartOptions, 'workflowId'> & { sessionId?: string } = {},
  ): Promise<SessionHandle> {
    const sessionId = options.sessionId ?? `session-${randomUUID()}`;
    const summary = `${input.agent}: chat session`;
    return new SessionHandle(await this.startWorkflow('chatSession', sessionId, input, summary, options), this.chunks);
  }

  /**
   * Starts a run or session; on behalf of a principal (the gateway's callers), the input names it and
   * the execution carries it in `PatchloopPrincipal` from its start, so listings find it at once. A run
   * or session also starts with its agent and `running` when the namespace has patchloop's attributes:
   * attributes given at the start are free, where the run's own first upsert is a billable action.
   */
  private async startWorkflow(
    type: string,
    workflowId: string,
    input: AgentRunInputWire | ChatSessionInputWire | Record<string, unknown>,
    staticSummary: string,
    options: Pick<StartOptions, 'principal'> & {
      attributes?: SearchAttributePair[];
      memo?: Record<string, unknown>;
    } = {},
  ): Promise<WorkflowHandle> {
    const principal = options.principal;
    const attributes: SearchAttributePair[] = [
      ...(options.attributes ?? []),
      ...(principal === undefined ? [] : [{ key: keys.principal, value: principal }]),
      ...(type !== 'llmFunction' && typeof input['agent'] === 'string' && (await this.searchAttributesPresent())
        ? [
            { key: keys.agent, value: input['agent'] },
            { key: keys.status, value: 'running' },
          ]
        : []),
    ];
    return (await this.temporal.workflow.start(type, {
      taskQueue: this.taskQueue,
      workflowId,
      args: [principal === undefined ? input : { ...input, principal }],
      staticSummary,
      ...(attributes.length > 0 ? { typedSearchAttributes: attributes } : {}),
      ...(options.memo ? { memo: options.memo } : {}),
    })) as WorkflowHandle;
  }

  /**
   * Whether the namespace has patchloop's search attributes (by default the agent and status ones), asked
   * once per client; false when it cannot tell.
   */
  private async searchAttributesPresent(...wanted: Array<{ name: string }>): Promise<boolean> {
    this.searchAttributesKnown ??= this.temporal.connection.operatorService
      .listSearchAttributes({ namespace: this.temporal.options.namespace })
      .then(({ customAttributes }) => new Set(Object.keys(customAttributes ?? {})))
      .catch(() => new Set<string>());
    const present = await this.searchAttributesKnown;
    return (wanted.length > 0 ? wanted : [keys.agent, keys.status]).every((key) => present.has(key.name));
  }

  /** A handle on a session, whatever run of its continue-as-new chain is current. */
  session(sessionId: string): SessionHandle {
    return new SessionHandle(this.temporal.workflow.getHandle(sessionId), this.chunks);
  }

  /** Runs workflow `llmFunction` and returns its validated output (see `defineLlmFunction` for the typed call). */
  /** Runs a typed LLM function durably: arguments and output are checked with its zod schemas. */
  async call<Input extends z.ZodObject, Output extends z.ZodType>(
    fn: LlmFunction<Input, Output>,
    args: z.input<Input>,
    options: { workflowId?: string } = {},
  ): Promise<z.output<Output>> {
    const value = await this.runFunction(fn.name, fn.definition.input.parse(args), options);
    return fn.definition.output.parse(value);
  }

  async runFunction(
    name: string,
    args: Record<string, unknown>,
    options: { workflowId?: string } = {},
  ): Promise<unknown> {
    const workflowId = options.workflowId ?? `fn-${name}-${randomUUID()}`;
    const handle = await this.startWorkflow('llmFunction', workflowId, { function: name, args }, `function ${name}`);
    try {
      return await workflowResult(handle);
    } catch (error) {
      if (error instanceof WorkflowFailedError) throw new RunFailedError(workflowId, error);
      throw error;
    }
  }

  /**
   * Runs and sessions from Temporal's visibility store, newest first, over patchloop's search
   * attributes: what `patchloop list` prints and the console lists. `text` keeps those whose workflow id
   * or agent contains it (of the newest `scan` executions the other filters find).
   */
  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const limit = filter.limit ?? 20;
    const query = [
      `WorkflowType IN ('agentRun', 'chatSession')`,
      ...(filter.agent ? [`${keys.agent.name} = ${quoted(filter.agent)}`] : []),
      ...(filter.status === 'failed'
        ? // Runs that failed before failed runs kept their state in the attributes are failed all the same.
          [`(${keys.status.name} = 'failed' OR ExecutionStatus = 'Failed')`]
        : filter.status
          ? [`${keys.status.name} = ${quoted(filter.status)}`]
          : []),
      ...(filter.parent ? [`ParentWorkflowId = ${quoted(filter.parent)}`] : []),
      ...(filter.schedule ? [`${keys.schedule.name} = ${quoted(this.schedules.idOf(filter.schedule))}`] : []),
      ...(filter.principal ? [`${keys.principal.name} = ${quoted(filter.principal)}`] : []),
      ...(filter.idPrefix ? [`WorkflowId STARTS_WITH ${quoted(filter.idPrefix)}`] : []),
      // A run that continued as new, was terminated or timed out keeps its last reported state: only
      // running executions are running.
      ...(['running', 'awaiting_approval', 'awaiting_budget', 'waiting'].includes(filter.status ?? '')
        ? [`ExecutionStatus = 'Running'`]
        : []),
    ].join(' AND ');
    const text = filter.text?.trim().toLowerCase();
    const listed: RunSummary[] = [];
    let scanned = 0;
    for await (const execution of this.temporal.workflow.list({ query, pageSize: Math.min(100, limit) })) {
      scanned += 1;
      const run = runSummaryOf(execution);
      if (!text || run.workflow_id.toLowerCase().includes(text) || run.agent?.toLowerCase().includes(text))
        listed.push(run);
      if (listed.length >= limit || scanned >= (filter.scan ?? 1000)) break;
    }
    return listed;
  }

  /** The workflow type behind an id (`agentRun` or `chatSession`). */
  async workflowType(workflowId: string): Promise<string> {
    return (await this.temporal.workflow.getHandle(workflowId).describe()).type;
  }

  async close(): Promise<void> {
    await this.chunks?.close?.();
    await this.temporal.connection.close();
  }
}

/**
 * Waits until a fork has read its state (its `status` query answers: its handlers are set), or throws
 * its failure when it could not (`RunFailedError`, `ForkUnavailable`). At most ten minutes.
 */
async function untilForked(fork: RunHandle): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
    if (
      await fork.status().then(
        () => true,
        () => false,
      )
    )
      return;
    if ((await fork.workflow.describe()).status.name !== 'RUNNING') {
      await fork.result();
      return;
    }
    if (Date.now() > deadline) throw new Error(`the fork ${fork.workflowId} did not read its state within ten minutes`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** A string literal of Temporal's list filter. */
function quoted(text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

function oneLine(text: string, most: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > most ? `${flat.slice(0, most - 1)}…` : flat;
}

/** How a run or session starts: its id, and the principal it is started for (the gateway's callers). */
export interface StartOptions {
  workflowId?: string;
  /** Recorded in the input and in `PatchloopPrincipal` (docs/gateway.md). */
  principal?: string;
}

/** What `fork` and `rewind` take: the iteration and the overrides (`ForkSource`), the new run's id and principal. */
export interface ForkOptions extends Omit<ForkSource, 'workflow_id'> {
  workflowId?: string;
  principal?: string;
  /** The fork's tool calls answered from a recorded run (`tool_recordings`, evaluations). */
  toolRecordings?: ToolRecordingsWire;
}

/** A fork as `forksOf` lists it: the run, and the iteration (or a session's turn) it was forked at. */
export interface ForkSummary extends RunSummary {
  at: number | null;
  unit: ForkUnit;
}

/** What a fork's start memo holds (`FORK_MEMO`): where it comes from. */
export interface ForkMemo {
  workflow_id: string;
  at: number;
  /** Absent for a run's fork (an iteration). */
  unit?: ForkUnit;
}

/** The memo a fork starts with: where it comes from (listings return it with each fork). */
const FORK_MEMO = 'patchloop_fork';

/** Where a workflow was forked from, read from its memo (as a description or a listing returns it). */
export function forkMemoOf(memo: Record<string, unknown> | undefined): ForkMemo | undefined {
  const fork = memo?.[FORK_MEMO] as Partial<ForkMemo> | undefined;
  if (typeof fork?.workflow_id !== 'string' || typeof fork.at !== 'number') return undefined;
  return { workflow_id: fork.workflow_id, at: fork.at, ...(fork.unit === 'turn' ? { unit: fork.unit } : {}) };
}

/** A fork the client refuses before it starts anything (the original is neither a run nor a session, say). */
export class ForkRefusedError extends Error {
  override name = 'ForkRefusedError';
}

/** What `listRuns` looks for (every field optional). */
export interface RunFilter {
  agent?: string;
  /** patchloop's state (`PatchloopStatus`): running, awaiting_approval, completed, ... */
  status?: string;
  /** Children of this workflow id (sub-agents, forks). */
  parent?: string;
  /** Runs a fire of this schedule (its name, on the client's task queue) started. */
  schedule?: string;
  /** Runs the gateway started for this principal (`PatchloopPrincipal`). */
  principal?: string;
  /** Runs whose workflow id starts with this (an exact query, unlike `text`). */
  idPrefix?: string;
  /** Part of the workflow id or the agent's name. */
  text?: string;
  /** At most this many runs (default 20). */
  limit?: number;
  /** With `text`: the most executions to look through (default 1,000). */
  scan?: number;
}

/** A run or session as the visibility store lists it. */
export interface RunSummary {
  workflow_id: string;
  type: string;
  agent: string | null;
  status: string;
  iterations: number | null;
  tool_calls: number | null;
  total_tokens: number | null;
  started: string;
  /** When it closed (completed, failed, continued as new, ...); null while it runs. */
  closed: string | null;
  parent_workflow_id: string | null;
  /** The principal that started it through the gateway; null for runs started otherwise. */
  principal: string | null;
  /** Worker Versioning: `deployment/build` of the run's version. */
  build?: string;
}

/** A run as the visibility store (a list, or a run's description) has it. */
export function runSummaryOf(execution: Omit<WorkflowExecutionInfo, 'raw'>): RunSummary {
  const attributes = execution.typedSearchAttributes;
  return {
    workflow_id: execution.workflowId,
    type: execution.type,
    agent: attributes.get(keys.agent) ?? null,
    // Before the worker resolved the agent (or without search attributes), Temporal's own status.
    status:
      execution.status.name === 'RUNNING'
        ? (attributes.get(keys.status) ?? 'running')
        : execution.status.name === 'COMPLETED' || execution.status.name === 'FAILED'
          ? (attributes.get(keys.status) ?? execution.status.name.toLowerCase())
          : execution.status.name.toLowerCase().replace(/_/g, ' '),
    iterations: attributes.get(keys.iterations) ?? null,
    tool_calls: attributes.get(keys.toolCalls) ?? null,
    total_tokens: attributes.get(keys.totalTokens) ?? null,
    started: execution.startTime.toISOString(),
    closed: execution.closeTime?.toISOString() ?? null,
    parent_workflow_id: execution.parentExecution?.workflowId ?? null,
    principal: attributes.get(keys.principal) ?? null,
    ...(buildOf(execution.searchAttributes) ? { build: buildOf(execution.searchAttributes)! } : {}),
  };
}

/**
 * Worker Versioning: the deployment version a listed run is on (`deployment/build`), from the search
 * attribute the server keeps (`TemporalWorkerDeploymentVersion`, `deployment:build`); none when unversioned.
 */
function buildOf(attributes: Record<string, unknown>): string | undefined {
  const values = attributes['TemporalWorkerDeploymentVersion'];
  const version = Array.isArray(values) && typeof values[0] === 'string' ? values[0] : undefined;
  const at = version?.lastIndexOf(':') ?? -1;
  return version && at > 0 ? `${version.slice(0, at)}/${version.slice(at + 1)}` : undefined;
}

/** A run another run started, as `childRuns` lists it. */
export interface ChildRunSummary {
  workflow_id: string;
  type: string;
  /**
   * Temporal's status of the execution (completed, failed, ...); for a running one, how it runs as its
   * `PatchloopStatus` says (running, waiting, awaiting_approval, ...) when it has one.
   */
  status: string;
  started_at: string;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export class RunHandle {
  constructor(
    readonly workflow: WorkflowHandle,
    /** Where this client reads token chunks directly (Redis); absent: from the worker's stream endpoint. */
    readonly chunks?: ChunkTransport,
  ) {}

  get workflowId(): string {
    return this.workflow.workflowId;
  }

  abort(reason = ''): Promise<void> {
    return this.workflow.signal(abortSignal, { reason });
  }

  /**
   * Posts a user message (signal `user_message`): queues it without waiting. A run reads it at its next
   * step, a session as a turn after those queued; a refused one shows as an `input_rejected` event.
   */
  post(content: string): Promise<void> {
    return this.workflow.signal(userMessageSignal, { content });
  }

  /**
   * Submits a user message (update `user_message`): queues it and resolves once the run accepted it,
   * rejects with the reason if not.
   */
  submit(content: string): Promise<UserMessageAccepted> {
    return this.executeUpdate(userMessageUpdate, [{ content }]);
  }

  /** @deprecated use `post` (the same signal); this name goes in the next release. */
  sendUserMessage(content: string): Promise<void> {
    return this.post(content);
  }

  /** @deprecated use `submit` (the same update); this name goes in the next release. */
  submitUserMessage(content: string): Promise<UserMessageAccepted> {
    return this.submit(content);
  }

  /**
   * The transcript so far, read by pages (`transcriptPage`) so that none passes the payload store's
   * threshold or gRPC's message limit; read again from the start if the run changed it meanwhile.
   */
  async transcript(): Promise<Message[]> {
    // A run that changes its transcript faster than it can be read is read whole once it is let be:
    // after this many restarts the reader says so instead of reading forever.
    for (let restart = 0; restart < TRANSCRIPT_READ_RESTARTS; restart += 1) {
      let text = '';
      let offset = 0;
      let digest: string | undefined;
      for (;;) {
        let page;
        try {
          page = await this.workflow.query(transcriptPageQuery, { offset });
        } catch (error) {
          // A worker built before pages answers the whole transcript only. The SDK reports a handler
          // that threw as "not registered" too: only the workflow's own words mean that.
          if (error instanceof QueryNotRegisteredError && /did not register a handler/.test(error.message))
            return this.workflow.query(transcriptQuery);
          throw error;
        }
        if (digest !== undefined && page.digest !== digest) break;
        digest = page.digest;
        text += page.text;
        offset = page.next_offset;
        if (page.done) return JSON.parse(text) as Message[];
      }
    }
    throw new Error(
      `the transcript of ${this.workflowId} changed during each of ${TRANSCRIPT_READ_RESTARTS} reads; read it again later`,
    );
  }

  /** The transcript's digest and length, from one small page: whether it changed since a reader's last read. */
  async transcriptVersion(): Promise<{ digest: string; messages: number }> {
    const page = await this.workflow.query(transcriptPageQuery, { offset: 0, max_bytes: 4096 });
    return { digest: page.digest, messages: page.messages };
  }

  /**
   * Delivers an event (update `deliver_event`): the run's `wait_for_event` for `name` takes it, or the
   * run holds it for its next one. With `key` the same event delivered twice applies once: the key is
   * the update's id, so Temporal answers a repeat with the first answer, and the run remembers keys
   * across continue-as-new (its answer then says `duplicate`). An event the run refuses (a name its
   * agent does not wait for, a payload over the limit, a full inbox) rejects with `EventRefusedError`.
   */
  async deliverEvent(name: string, payload: JsonValue = null, options: { key?: string } = {}): Promise<EventDelivered> {
    const delivery = { name, payload, ...(options.key !== undefined ? { key: options.key } : {}) };
    try {
      return await this.executeUpdate(
        deliverEventUpdate,
        [delivery],
        options.key !== undefined ? `event:${options.key}` : undefined,
      );
    } catch (error) {
      if (!(error instanceof WorkflowUpdateFailedError) || !error.cause) throw error;
      // A key the run applied before: refused as a repeat (it records nothing), answered as delivered.
      const cause = error.cause;
      if (cause instanceof ApplicationFailure && cause.type === FailureType.EventAlreadyDelivered)
        return (
          (cause.details?.[0] as EventDelivered | undefined) ?? {
            accepted: true,
            duplicate: true,
            taken_by_wait: false,
            held: 0,
          }
        );
      throw new EventRefusedError(cause.message);
    }
  }

  /** Gated tool calls waiting for a decision, in their batch's order. */
  pendingApprovals(): Promise<PendingApproval[]> {
    return this.workflow.query(pendingApprovalsQuery);
  }

  /**
   * Raises the run's budget (update `extend_budget`): a run waiting for it goes on. Answers the new
   * limits; a refused extension (not running, nothing named) rejects with the reason.
   */
  async extendBudget(extension: BudgetExtension): Promise<Record<string, number | null>> {
    try {
      return await this.executeUpdate(extendBudgetUpdate, [extension]);
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError && error.cause) throw new Error(error.cause.message);
      throw error;
    }
  }

  /**
   * Approves a waiting tool call (update `approve`); rejects if the id does not wait for a decision.
   * `run`: the sub-agent run the call belongs to (its `workflow_id` in `pending_approvals`), when the id
   * alone does not say; a sub-agent's call is decided on the top run and goes down the tree to it.
   */
  approve(toolCallId: string, reason?: string, run?: string): Promise<ApprovalAccepted> {
    return this.decide(toolCallId, true, reason, run);
  }

  /** Rejects a waiting tool call: the model gets a result saying so, with the reason, and the run goes on. */
  reject(toolCallId: string, reason: string, run?: string): Promise<ApprovalAccepted> {
    return this.decide(toolCallId, false, reason, run);
  }

  private async decide(
    toolCallId: string,
    approved: boolean,
    reason: string | undefined,
    run: string | undefined,
  ): Promise<ApprovalAccepted> {
    try {
      return await this.executeUpdate(approveUpdate, [
        {
          tool_call_id: toolCallId,
          approved,
          ...(reason !== undefined ? { reason } : {}),
          ...(run !== undefined ? { workflow_id: run } : {}),
        },
      ]);
    } catch (error) {
      // The validator's reason, not Temporal's generic "Workflow Update failed".
      if (error instanceof WorkflowUpdateFailedError && error.cause)
        throw new ApprovalRefusedError(error.cause.message);
      throw error;
    }
  }

  /**
   * Sends an update and waits for its result. An update the server rejected because no workflow code
   * saw it (type `UnprocessedUpdate`, "rejected because it wasn't processed by worker": seen when a
   * worker that has just started takes a run whose update waited for one) is sent again, at most
   * `UNPROCESSED_UPDATE_ATTEMPTS` times in all: nothing of it was applied. A rejection by the run itself
   * (its validator) is not.
   */
  protected async executeUpdate<Ret, Args extends [unknown, ...unknown[]]>(
    definition: UpdateDefinition<Ret, Args>,
    args: Args,
    updateId?: string,
  ): Promise<Ret> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.workflow.executeUpdate(definition, { args, ...(updateId !== undefined ? { updateId } : {}) });
      } catch (error) {
        const unprocessed =
          error instanceof WorkflowUpdateFailedError &&
          error.cause instanceof ApplicationFailure &&
          error.cause.type === UNPROCESSED_UPDATE;
        if (!unprocessed || attempt >= UNPROCESSED_UPDATE_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * The billable Temporal Cloud actions of the run's whole chain so far, counted from its history
   * (docs/runs.md#billable-actions); its child runs count in their own.
   */
  async billableActions(): Promise<BillableActions> {
    const client = this.workflow.client;
    const events: HistoryEvent[] = [];
    for await (const event of chainEvents(client.workflowService, client.options.namespace, this.workflowId))
      events.push(event);
    return countBillableActions(events);
  }

  /**
   * The runs this one started (sub-agents and forks, by any run of its chain), from Temporal's visibility
   * store: newest first, at most `limit`.
   */
  async childRuns(limit = 100): Promise<ChildRunSummary[]> {
    const children: ChildRunSummary[] = [];
    const query = `ParentWorkflowId = '${this.workflowId.replaceAll("'", "\\'")}'`;
    for await (const execution of this.workflow.client.list({ query, pageSize: Math.min(limit, 100) })) {
      // A running child says how it runs (waiting, awaiting_approval, ...) in its status attribute.
      const status = execution.status.name.toLowerCase();
      const reported = execution.typedSearchAttributes.get(keys.status);
      children.push({
        workflow_id: execution.workflowId,
        type: execution.type,
        status: status === 'running' && typeof reported === 'string' ? reported : status,
        started_at: execution.startTime.toISOString(),
      });
      if (children.length >= limit) break;
    }
    return children;
  }

  /**
   * How the run stands, with a page of its events after `after` (at most `limit`, default 500, and about
   * 1 MB); with `last`, the newest `last` of them.
   */
  status(after = 0, limit?: number, last?: number): Promise<RunStatus> {
    return this.workflow.query(statusQuery, {
      after,
      ...(limit !== undefined ? { limit } : {}),
      ...(last !== undefined ? { last } : {}),
    });
  }

  /** A page of the run's events after `after` (query `events`: at most `limit` and about 1 MB). */
  events(after = 0, limit = 1000): Promise<EventPage> {
    return this.workflow.query(eventsQuery, { after, limit });
  }

  /** Every event the run's log still holds after `after` (older ones left its window: `events_dropped`). */
  async allEvents(after = 0): Promise<{ events: RunEvent[]; events_dropped: number }> {
    const events: RunEvent[] = [];
    let dropped = 0;
    for (;;) {
      const page = await this.events(after, 5000);
      dropped = page.events_dropped;
      if (page.events.length === 0) return { events, events_dropped: dropped };
      events.push(...page.events);
      after = page.next_after;
    }
  }

  /** The run's phases that failed and are being tried again, with the last error of each (`show` prints them). */
  async retrying(): Promise<RetryingPhase[]> {
    return retryingPhases(await this.workflow.describe());
  }

  /**
   * The run's result, whole: a transcript (or answer) the run left out of it for its size is read by
   * the `transcriptPage` query and filled in. A failed run throws `RunFailedError` with the readable cause.
   */
  async result(): Promise<AgentRunResult> {
    let result: AgentRunResult;
    try {
      result = (await workflowResult(this.workflow)) as AgentRunResult;
    } catch (error) {
      if (error instanceof WorkflowFailedError) throw new RunFailedError(this.workflowId, error);
      throw error;
    }
    return result.transcript_query ? this.filledIn(result) : result;
  }

  /** The transcript a result left out, checked against the length the result gives. */
  protected async wholeTranscript(length: number | undefined): Promise<Message[]> {
    const transcript = await this.transcript();
    if (transcript.length !== length)
      throw new Error(
        `${this.workflowId} ended with ${length} messages, but its transcript query answers ${transcript.length}: is another run using its id?`,
      );
    return transcript;
  }

  private async filledIn(result: AgentRunResult): Promise<AgentRunResult> {
    const transcript = await this.wholeTranscript(result.transcript_length);
    const {
      transcript_omitted: _omitted,
      transcript_length: _length,
      transcript_query: _query,
      answer_omitted: answerOmitted,
      ...rest
    } = result;
    const last = transcript.at(-1)?.['content'];
    const answer = answerOmitted && typeof last === 'string' ? last : result.answer;
    return { ...rest, answer, transcript };
  }

  /**
   * Where the run's end notification stands (`notify`): delivering, retrying (the attempt under way and
   * the last error), delivered (when, after how many attempts) or gave up (the last error); null when
   * the run started none (no `notify`, or it has not ended). `description`: the run's, when read already.
   */
  async notification(description?: WorkflowExecutionDescription): Promise<NotificationState | null> {
    const run = description ?? (await this.workflow.describe());
    const firstRunId = run.raw.workflowExecutionInfo?.firstRunId || run.runId;
    const notifier = this.workflow.client.getHandle(notifierWorkflowId(this.workflowId, firstRunId));
    let found: WorkflowExecutionDescription;
    try {
      found = await notifier.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
    return notificationState(notifier, found);
  }

  /** Temporal's history figures for this run. */
  async historySize(): Promise<{ events: number; bytes: number }> {
    const description = await this.workflow.describe();
    return { events: description.historyLength, bytes: description.historySize ?? 0 };
  }
}

/** Where a run's end notification stands, as its notifier (`notifyRunEnd`) reports it. */
export type NotificationState = { notifier_id: string } & (
  | { state: 'delivering'; attempt: number }
  | { state: 'retrying'; attempt: number; last_error: { type: string; message: string } }
  | ({ state: 'delivered' } & NotifyDelivered)
  | { state: 'gave_up'; attempts: number | null; last_error: { type: string; message: string } }
);

/** The state of a notifier, from its description (and its result once it closed). */
async function notificationState(
  notifier: WorkflowHandle,
  description: WorkflowExecutionDescription,
): Promise<NotificationState> {
  const notifier_id = notifier.workflowId;
  if (description.status.name === 'RUNNING') {
    const [retrying] = retryingPhases(description);
    if (retrying)
      return { notifier_id, state: 'retrying', attempt: retrying.attempt, last_error: retrying.last_failure };
    return { notifier_id, state: 'delivering', attempt: description.raw.pendingActivities?.[0]?.attempt ?? 1 };
  }
  try {
    return { notifier_id, state: 'delivered', ...((await workflowResult(notifier)) as NotifyDelivered) };
  } catch (error) {
    const cause = error instanceof WorkflowFailedError ? (error.cause as ApplicationFailure | undefined) : undefined;
    // The notifier's failure carries its attempts and the last attempt's own error.
    const details = cause?.details?.[0] as
      { attempts?: number | null; last_error?: { type: string | null; message: string } } | undefined;
    const ended = description.status.name.toLowerCase();
    return {
      notifier_id,
      state: 'gave_up',
      attempts: details?.attempts ?? null,
      last_error: {
        type: details?.last_error?.type ?? cause?.type ?? ended,
        message: details?.last_error?.message ?? cause?.message ?? `the notifier ended ${ended}`,
      },
    };
  }
}

/** A long-lived chat session (workflow `chatSession`). */
export class SessionHandle extends RunHandle {
  /**
   * Sends a message (update `send`) and resolves with the assistant's reply when that turn ends. `post`
   * queues one without waiting.
   */
  send(content: string): Promise<TurnReply> {
    return this.executeUpdate(sendUpdate, [{ content }]);
  }

  /** Ends the session after the turns already queued. */
  close(): Promise<void> {
    return this.workflow.signal(closeSignal);
  }

  nextRequest(): Promise<string> {
    return this.workflow.query(nextRequestQuery);
  }

  /** The session's result, whole: a transcript it left out for its size is read by pages and filled in. */
  async sessionResult(): Promise<ChatSessionResult> {
    const result = (await workflowResult(this.workflow)) as ChatSessionResult;
    if (!result.transcript_query) return result;
    const transcript = await this.wholeTranscript(result.transcript_length);
    const { transcript_omitted: _omitted, transcript_length: _length, transcript_query: _query, ...rest } = result;
    return { ...rest, transcript };
  }
}

export class RunFailedError extends Error {
  override readonly name = 'RunFailedError';
  readonly type: string | undefined;
  /** Accepted user messages the model never saw because the run failed first. */
  readonly unprocessedMessages: UnprocessedMessage[];
  /** Why it failed, in the failure's own words (the message without the run id). */
  readonly causeMessage: string;
  constructor(
    readonly workflowId: string,
    failure: WorkflowFailedError,
  ) {
    const cause = failure.cause as (Error & { type?: string; details?: unknown[] }) | undefined;
    super(`run ${workflowId} failed: ${cause?.message ?? failure.message}`);
    this.causeMessage = cause?.message ?? failure.message;
    this.type = cause?.type;
    const carried = (cause?.details ?? []).find((detail): detail is { unprocessed_messages: UnprocessedMessage[] } =>
      Array.isArray((detail as { unprocessed_messages?: unknown } | null)?.unprocessed_messages),
    );
    this.unprocessedMessages = carried?.unprocessed_messages ?? [];
  }
}

/** An event the run refused: a name its agent does not wait for, a payload over the limit, a full inbox, a run that ended. */
export class EventRefusedError extends Error {
  override readonly name = 'EventRefusedError';
}

/** A decision the run refused: the id does not wait for one (unknown, decided already) or the run ended. */
export class ApprovalRefusedError extends Error {
  override readonly name = 'ApprovalRefusedError';
}

/**
 * The transcript a closed run's (or session's) result records, when it does: a sub-agent's result
 * leaves it to its caller, a long one to the `transcriptPage` query. The console and `show` read it
 * without a worker.
 */
export function recordedTranscript(
  result: Pick<AgentRunResult, 'transcript' | 'transcript_omitted'> | null,
): Message[] | null {
  return result && result.transcript_omitted !== true && Array.isArray(result.transcript) ? result.transcript : null;
}

/** How many times an update the server rejected unprocessed is sent in all (see `RunHandle.executeUpdate`). */
const UNPROCESSED_UPDATE_ATTEMPTS = 3;
/** The failure type of Temporal's own rejection of an update no workflow code processed. */
const UNPROCESSED_UPDATE = 'UnprocessedUpdate';

/** How many times a transcript read starts again because the run changed the transcript meanwhile. */
const TRANSCRIPT_READ_RESTARTS = 20;

/** A phase being tried again: its activity, the attempt under way, and why the last one failed. */
export interface RetryingPhase {
  activity: string;
  attempt: number;
  last_failure: { type: string; message: string };
}

/**
 * Phases that failed and are being tried again (a provider error while a model call retries): the
 * server's record of each pending activity's last failure, which the workflow itself cannot see.
 */
export function retryingPhases(description: WorkflowExecutionDescription): RetryingPhase[] {
  return (description.raw.pendingActivities ?? []).flatMap((activity) => {
    const failure = activity.lastFailure;
    if (!failure?.message || (activity.attempt ?? 1) < 2) return [];
    return [
      {
        activity: activity.activityType?.name ?? 'activity',
        attempt: activity.attempt ?? 1,
        last_failure: { type: failure.applicationFailureInfo?.type || 'Error', message: failure.message },
      },
    ];
  });
}
