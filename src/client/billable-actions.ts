import type { WorkflowService } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { heartbeatsIn } from '../runtime';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

/**
 * A run's billable Temporal Cloud actions, counted from its history the way Temporal Cloud bills them
 * (docs/runs.md#billable-actions names the rules and what a history cannot show).
 */
export interface BillableActions {
  /** Everything below: what Temporal Cloud would bill for this history (heartbeats estimated). */
  total: number;
  /** A run started: by a client, by continue-as-new (each run of a chain), or as a child (the child's own). */
  workflow_starts: number;
  /** Activities scheduled (each one's first attempt). */
  activities: number;
  /** Further attempts of activities (from each one's recorded attempt number). */
  activity_retries: number;
  /** Workflow tasks that recorded local activities (all of one task's local activities are one action). */
  local_activity_tasks: number;
  /** Further attempts of local activities (the server's metering of each workflow task). */
  local_activity_retries: number;
  timers: number;
  /** Signals received, from a client or another workflow. */
  signals: number;
  /** Updates accepted (a rejected update costs one too, and leaves nothing in history). */
  updates: number;
  /** Search-attribute upserts (but those of `TemporalChangeVersion` only, which are free). */
  search_attribute_upserts: number;
  /** Memo upserts (workflow properties modified). */
  memo_upserts: number;
  /** Child workflows started: the parent's intent (the child's start counts in the child's history). */
  child_workflows: number;
  /** Workflow options updated (a completion callback, a versioning override). */
  options_updates: number;
  /**
   * Activity heartbeats that reached the server, estimated (heartbeats are billed but never recorded):
   * those patchloop's cadence sends in each closed activity's last attempt (`heartbeatsIn`), when it
   * has a heartbeat timeout; earlier attempts' time is not in history, nor a batch's checkpoints.
   */
  heartbeats_estimated: number;
}

/** Markers of versioning (`patched()` in TypeScript and the core SDKs, `GetVersion` in Go): not billed. */
const VERSION_MARKERS = new Set(['core_patch', 'Version']);
const CHANGE_VERSION = 'TemporalChangeVersion';

/**
 * Counts the billable actions of one run's history, or of a whole chain's events in any order of runs
 * (each run's start counts once; the continue-as-new event itself is not counted again).
 */
export function countBillableActions(events: Iterable<HistoryEvent>): BillableActions {
  const counts: Omit<BillableActions, 'total'> = {
    workflow_starts: 0,
    activities: 0,
    activity_retries: 0,
    local_activity_tasks: 0,
    local_activity_retries: 0,
    timers: 0,
    signals: 0,
    updates: 0,
    search_attribute_upserts: 0,
    memo_upserts: 0,
    child_workflows: 0,
    options_updates: 0,
    heartbeats_estimated: 0,
  };
  const markerTasks = new Set<string>();
  const scheduled = new Map<string, HistoryEvent>();
  const started = new Map<string, HistoryEvent>();
  for (const event of events) {
    const type = event.eventType;
    if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) counts.workflow_starts += 1;
    else if (type === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      counts.activities += 1;
      scheduled.set(String(event.eventId), event);
    } else if (type === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const attributes = event.activityTaskStartedEventAttributes;
      counts.activity_retries += Math.max(0, (attributes?.attempt ?? 1) - 1);
      started.set(String(attributes?.scheduledEventId), event);
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
      counts.local_activity_retries +=
        event.workflowTaskCompletedEventAttributes?.meteringMetadata?.nonfirstLocalActivityExecutionAttempts ?? 0;
    else if (type === EventType.EVENT_TYPE_MARKER_RECORDED) {
      const attributes = event.markerRecordedEventAttributes;
      if (!VERSION_MARKERS.has(attributes?.markerName ?? ''))
        markerTasks.add(String(attributes?.workflowTaskCompletedEventId));
    } else if (type === EventType.EVENT_TYPE_TIMER_STARTED) counts.timers += 1;
    else if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) counts.signals += 1;
    else if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) counts.updates += 1;
    else if (type === EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES) {
      const fields = Object.keys(
        event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
      );
      if (fields.some((field) => field !== CHANGE_VERSION)) counts.search_attribute_upserts += 1;
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED) counts.memo_upserts += 1;
    else if (type === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) counts.child_workflows += 1;
    else if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED) counts.options_updates += 1;
    else if (activityClosedTypes.has(type ?? 0))
      counts.heartbeats_estimated += estimatedHeartbeats(event, scheduled, started);
  }
  counts.local_activity_tasks = markerTasks.size;
  const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
  return { total, ...counts };
}

const activityClosedTypes = new Set<number>([
  EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
  EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
]);

/** The heartbeats one closed activity's last attempt sent at most, from its time and heartbeat timeout. */
function estimatedHeartbeats(
  closed: HistoryEvent,
  scheduled: Map<string, HistoryEvent>,
  started: Map<string, HistoryEvent>,
): number {
  const attributes =
    closed.activityTaskCompletedEventAttributes ??
    closed.activityTaskFailedEventAttributes ??
    closed.activityTaskTimedOutEventAttributes ??
    closed.activityTaskCanceledEventAttributes;
  const id = String(attributes?.scheduledEventId);
  const heartbeatTimeout = scheduled.get(id)?.activityTaskScheduledEventAttributes?.heartbeatTimeout;
  const start = started.get(id)?.eventTime;
  if (!start || !closed.eventTime || !heartbeatTimeout || milliseconds(heartbeatTimeout) <= 0) return 0;
  return heartbeatsIn(milliseconds(closed.eventTime) - milliseconds(start));
}

function milliseconds(value: { seconds?: unknown; nanos?: number | null }): number {
  return Number(value.seconds ?? 0) * 1000 + Math.floor((value.nanos ?? 0) / 1e6);
}

/** The total, then each kind of action the run spent (the ones it spent none of are left out). */
export function actionsLine(actions: BillableActions): string {
  const { total, ...kinds } = actions;
  const spent = Object.entries(kinds).filter(([, count]) => count > 0);
  return `${total}${spent.length > 0 ? ` (${spent.map(([kind, count]) => `${count} ${kind.replaceAll('_', ' ')}`).join(', ')})` : ''}`;
}

/**
 * Every event of a workflow's chain of runs, the latest run first (a run started by continue-as-new
 * names the one before), in pages of at most `pageSize` events (a history page stays under gRPC's 4 MB).
 */
export async function* chainEvents(
  service: WorkflowService,
  namespace: string,
  workflowId: string,
  pageSize = 100,
): AsyncGenerator<HistoryEvent> {
  let run: string | undefined;
  do {
    let previous: string | undefined;
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await service.getWorkflowExecutionHistory({
        namespace,
        execution: { workflowId, ...(run ? { runId: run } : {}) },
        maximumPageSize: pageSize,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const event of page.history?.events ?? []) {
        previous ||= event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
        yield event;
      }
      nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
    } while (nextPageToken);
    run = previous;
  } while (run);
}
