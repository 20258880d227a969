import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(event: HistoryEvent | undefined): number {
  const at = event?.eventTime;
  return at ? Number(at.seconds ?? 0) * 1000 + Math.floor((at.nanos ?? 0) / 1e6) : Number.NaN;
}

/** The run's `abort` signal, as its history records it. */
export function isAbortSignal(event: HistoryEvent): boolean {
  return event.workflowExecutionSignaledEventAttributes?.signalName === 'abort';
}

/**
 * From a closed run's history: the time from its `abort` signal's event to its close event (ms, server
 * time), the measure of bench:abort and the chaos run; null when the history holds no abort signal.
 */
export function abortSignalToClose(events: readonly HistoryEvent[]): number | null {
  const signal = events.find(isAbortSignal);
  return signal ? eventMs(events.at(-1)) - eventMs(signal) : null;
}
