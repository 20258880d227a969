import { condition, patched } from '@temporalio/workflow';

/** One timer of a wait without a deadline of its own; when it fires, the wait goes on with another. */
const OPEN_ENDED_TIMER = '30 days';
/** Temporal shows a summary of at most 200 bytes. */
const SUMMARY_CHARS = 200;

/**
 * Waits for a person's decision (tool calls to approve, a budget to extend) until `decided()`, or
 * until `timeoutMs` has passed (then resolves false). The wait is a timer whose summary says what it
 * waits for: the timeline, which a run's page in the Temporal UI shows first, has a bar reading
 * `waiting for approval: ...` for as long as the run waits (the workflow's current details say it too,
 * on the page's User Metadata tab). Runs recorded before waited on a bare condition, timed only with a
 * deadline, and replay that way.
 */
export async function waitForDecision(label: string, decided: () => boolean, timeoutMs?: number): Promise<boolean> {
  if (!patched('decision-waits-show-in-timeline')) {
    if (timeoutMs !== undefined) return condition(decided, timeoutMs);
    await condition(decided);
    return true;
  }
  const summary = label.length > SUMMARY_CHARS ? `${label.slice(0, SUMMARY_CHARS - 1)}…` : label;
  if (timeoutMs !== undefined) return condition(decided, timeoutMs, { summary });
  while (!(await condition(decided, OPEN_ENDED_TIMER, { summary }))) {
    // The timer ran out with nothing decided: wait on.
  }
  return true;
}
