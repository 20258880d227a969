import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

/** Events after which a run's log may hold new events: a workflow task completed, or the run closed. */
const PROGRESS = new Set<number>([
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

/** Events per page of the first read of a history (the long polls after it return a few). */
const PAGE_SIZE = 1000;

/**
 * Waits for a run's next workflow task by long-polling its history, which Temporal does not bill,
 * where each question to the run (a query) is a billable action: a run's events change only when one of
 * its workflow tasks completes, so a follower asks again only then, not on a timer. `start` takes the
 * position before the first question, so a task completed in between wakes the next wait at once.
 * Follows the chain across continue-as-new.
 */
export class WorkflowTaskWatch {
  private position: Uint8Array | undefined;
  private closed = false;

  constructor(private readonly workflow: WorkflowHandle) {}

  /** Reads the history so far (a page at a time): the position the waits start from. */
  async start(signal: AbortSignal): Promise<void> {
    while ((await this.read(signal)).length === PAGE_SIZE && !this.closed);
  }

  /**
   * Resolves true when the run may have new events: a workflow task completed, the run closed or
   * continued as new, or a long poll came back empty (the server's limit, about 20 s: asking then
   * costs little and misses nothing); false once the run has closed and that was told.
   */
  async next(signal: AbortSignal): Promise<boolean> {
    while (!this.closed) {
      const events = await this.read(signal);
      if (events.length === 0 || events.some((event) => PROGRESS.has(event.eventType ?? 0))) return true;
    }
    return false;
  }

  private async read(signal: AbortSignal): Promise<HistoryEvent[]> {
    const client = this.workflow.client;
    const page = await client.withAbortSignal(signal, () =>
      client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId: this.workflow.workflowId },
        maximumPageSize: PAGE_SIZE,
        waitNewEvent: true,
        ...(this.position ? { nextPageToken: this.position } : {}),
      }),
    );
    const events = page.history?.events ?? [];
    const token = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
    // The run ended by continue-as-new: the next read starts at the new run's first event.
    const continued = events.some(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    );
    this.position = continued ? undefined : token;
    this.closed = !continued && !token;
    return events;
  }
}
