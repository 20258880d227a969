import { WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import {
  forkMemoOf,
  recordedTranscript,
  runSummaryOf,
  type PatchloopClient,
  type RunHandle,
  type RunSummary,
} from '../client/patchloop-client';
import { askingWorker, WORKER_ANSWER_MS } from '../client/worker-wait';
import type { BillableActions } from '../client/billable-actions';
import type { Message } from '../context';
import type { AgentRunResult, RunEvent } from '../runtime';
import { TIMELINE_ROWS, type ChildNode, type RunView } from './pages';

/** How deep the child tree goes on a run's page (a deeper run is one click further). */
const TREE_DEPTH = 4;

export class RunNotFound extends Error {}

/** Closed runs' pages the console keeps (a closed run no longer changes; reading it again means a replay). */
export class ClosedRuns {
  private readonly views = new Map<string, RunView>();
  private readonly reading = new Map<string, Promise<RunView>>();
  constructor(private readonly most = 20) {}
  /** One read at a time per run: pages opened meanwhile wait for it instead of replaying the run again. */
  readOnce(key: string, read: () => Promise<RunView>): Promise<RunView> {
    let pending = this.reading.get(key);
    if (!pending) {
      pending = read().finally(() => this.reading.delete(key));
      this.reading.set(key, pending);
    }
    return pending;
  }
  get(key: string): RunView | undefined {
    const view = this.views.get(key);
    if (view) {
      this.views.delete(key);
      this.views.set(key, view);
    }
    return view;
  }
  set(key: string, view: RunView): void {
    this.views.set(key, view);
    for (const oldest of this.views.keys()) {
      if (this.views.size <= this.most) break;
      this.views.delete(oldest);
    }
  }
}

/** What a run's page takes from the run's description (Temporal's view of its execution). */
export function describedRun(
  workflowId: string,
  description: WorkflowExecutionDescription,
): Pick<
  RunView,
  'workflowId' | 'type' | 'execution' | 'started' | 'closed' | 'parent' | 'history' | 'summary' | 'forkedFrom'
> {
  return {
    workflowId,
    forkedFrom: forkMemoOf(description.memo) ?? null,
    summary: runSummaryOf(description),
    type: description.type,
    execution: description.status.name.toLowerCase().replace(/_/g, ' '),
    started: description.startTime.toISOString(),
    closed: description.closeTime?.toISOString() ?? null,
    parent: description.parentExecution?.workflowId ?? null,
    history: { events: description.historyLength, bytes: description.historySize ?? 0 },
  };
}

/**
 * What a run's page shows, read through the client: description, status, events, transcript, children.
 * A closed run is no longer in its worker's cache, so each of its queries replays its history (seconds
 * for a long run): with `replay: false` one read neither its kept page nor queries it, only its
 * description and recorded result (`detailsPending`); its details follow with `replay: true` and are kept.
 */
export async function readRunView(
  client: PatchloopClient,
  workflowId: string,
  closedRuns?: ClosedRuns,
  options: { replay?: boolean; allEvents?: boolean } = {},
): Promise<RunView> {
  const run = client.run(workflowId);
  let description;
  try {
    description = await run.workflow.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) throw new RunNotFound(`no run ${workflowId}`);
    throw error;
  }
  const described = describedRun(workflowId, description);
  const { execution } = described;
  const closed = description.closeTime !== undefined;
  // Kept with the events the page showed: every one (`allEvents`) or the newest.
  const key = `${workflowId}/${description.runId}${options.allEvents ? '/all' : ''}`;
  const kept = closed ? closedRuns?.get(key) : undefined;
  // A closed run's page is kept, but forks of it may start at any time: they are read again.
  if (kept) return { ...kept, forks: await client.forksOf(workflowId).catch(() => kept.forks ?? []) };
  const quick = closed && options.replay === false;
  const [result, children, failure, actions, forks] = await Promise.all([
    closed && execution === 'completed' ? recordedResult(run) : Promise.resolve(null),
    childTree(client, workflowId, [], TREE_DEPTH).catch(() => []),
    execution === 'failed' ? failureOf(run) : Promise.resolve(null),
    // Read from the whole history: with the details of a closed run, not its first quick page.
    quick ? Promise.resolve(null) : run.billableActions().catch(() => null),
    client.forksOf(workflowId).catch(() => []),
  ]);
  const recorded = recordedTranscript(result);
  if (quick)
    return {
      ...described,
      forks,
      actions,
      status: null,
      unserved: null,
      events: [],
      eventsBefore: 0,
      eventsDropped: 0,
      transcript: recorded,
      children,
      failure,
      result,
      detailsPending: true,
    };
  const parts = {
    run,
    described: { ...described, forks },
    recorded,
    children,
    failure,
    result,
    actions,
    worker: askingWorker(run, description, closed ? undefined : WORKER_ANSWER_MS),
  };
  if (closed && closedRuns)
    return closedRuns.readOnce(key, () => queriedView(parts, options.allEvents, closedRuns, key));
  return queriedView(parts, options.allEvents);
}

/** A run's page from its queries (a closed run's kept under `key`). */
async function queriedView(
  parts: {
    run: RunHandle;
    described: ReturnType<typeof describedRun>;
    recorded: Message[] | null;
    children: ChildNode[];
    failure: string | null;
    result: AgentRunResult | null;
    actions: BillableActions | null;
    worker: ReturnType<typeof askingWorker>;
  },
  allEvents = false,
  closedRuns?: ClosedRuns,
  key?: string,
): Promise<RunView> {
  const { run, described, recorded, children, failure, result, actions, worker } = parts;
  const { execution } = described;
  const closed = described.closed !== null;
  // It is asked as little as possible: status and events in one answer (the newest, unless all are
  // shown); each query waits a few seconds for a worker at most, and the page shows what it has.
  const [status, events, transcript] = await Promise.all([
    worker.ask(() =>
      closed ? run.status(0, 5000, allEvents ? undefined : TIMELINE_ROWS) : run.status(Number.MAX_SAFE_INTEGER),
    ),
    closed ? Promise.resolve(undefined) : worker.ask(() => run.allEvents()),
    recorded ?? readTranscript(run, execution, worker),
  ]);
  // The rest of a closed run's log, when the status page did not hold it all.
  const rest = events ?? {
    events: status?.events ?? [],
    events_dropped: status?.events_dropped ?? 0,
  };
  // (The answer stops at 5,000 events or about 1 MB of them: only then is there more.)
  if (
    closed &&
    status &&
    allEvents &&
    (status.events.length >= 5000 || JSON.stringify(status.events).length > 900_000)
  ) {
    const more = await run.allEvents(status.next_after).catch(() => null);
    if (more) rest.events = [...rest.events, ...more.events];
  }
  const view: RunView = {
    ...described,
    status: status ?? null,
    unserved: worker.unserved() ?? null,
    events: rest.events,
    // Events the log holds before the first one read (its seqs count from 1, the dropped ones first).
    eventsBefore: Math.max(0, (rest.events[0]?.seq ?? 1) - 1 - rest.events_dropped),
    eventsDropped: rest.events_dropped,
    transcript,
    children: withStartedChildren(children, rest.events),
    failure,
    result,
    actions,
    detailsPending: false,
  };
  if (closed && key && view.status !== null && transcript !== null) closedRuns?.set(key, view);
  return view;
}

/** A completed run's result as its history records it (from its close event: no replay); null if unreadable. */
async function recordedResult(run: RunHandle): Promise<AgentRunResult | null> {
  try {
    return (await run.workflow.result()) as AgentRunResult;
  } catch {
    return null;
  }
}

/** The transcript by query; for a run that completed while no worker answers, from its result. */
export async function readTranscript(
  run: RunHandle,
  execution: string,
  worker: ReturnType<typeof askingWorker>,
): Promise<Message[] | null> {
  const transcript = await worker.ask(() => run.transcript());
  if (transcript !== undefined || execution !== 'completed') return transcript ?? null;
  return recordedTranscript(await recordedResult(run));
}

export async function failureOf(run: RunHandle): Promise<string | null> {
  try {
    await run.result();
    return null;
  } catch (error) {
    const failure = error as Error & { type?: string; causeMessage?: string };
    return `${failure.type ?? failure.name}: ${failure.causeMessage ?? failure.message}`;
  }
}

/** A run's children from the visibility store (`ParentWorkflowId`), and theirs, to `depth` levels. */
export async function childTree(
  client: PatchloopClient,
  workflowId: string,
  seen: string[],
  depth: number,
): Promise<ChildNode[]> {
  if (depth <= 0 || seen.includes(workflowId)) return [];
  const listed = await client.listRuns({ parent: workflowId, limit: 100 });
  return Promise.all(
    listed.reverse().map(async (child: RunSummary) => ({
      workflow_id: child.workflow_id,
      agent: child.agent,
      status: child.status,
      children: await childTree(client, child.workflow_id, [...seen, workflowId], depth - 1).catch(() => []),
    })),
  );
}

/**
 * Sub-agent runs the parent's events name but the visibility store does not list yet (it lags a
 * little behind): the tree shows them at once, with their state from the events.
 */
export function withStartedChildren(children: ChildNode[], events: RunEvent[]): ChildNode[] {
  const known = new Set(children.map((child) => child.workflow_id));
  const added: ChildNode[] = [];
  for (const event of events) {
    if (event.event_type !== 'subagent_started' || known.has(event.child_workflow_id)) continue;
    known.add(event.child_workflow_id);
    const finished = events.find(
      (later) => later.event_type === 'subagent_finished' && later.child_workflow_id === event.child_workflow_id,
    );
    added.push({
      workflow_id: event.child_workflow_id,
      agent: event.agent,
      status: finished?.event_type === 'subagent_finished' ? finished.status : 'running',
      children: [],
    });
  }
  return [...children, ...added];
}
