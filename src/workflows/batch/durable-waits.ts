import { condition, setCurrentDetails } from '@temporalio/workflow';
import { repairToolArguments } from '../../context';
import {
  failedCall,
  SLEEP_TOOL,
  succeededCall,
  takeHeldEvent,
  waitPlan,
  WAIT_FOR_EVENT_TOOL,
  waitResultText,
  type ToolCallRequest,
  type WaitOutcome,
  type WaitPlan,
  type WaitTimes,
  type WorkflowCallResult,
} from '../../runtime';
import { earliestWait, emit, type Run, type WaitInProgress } from '../run/run-state';
import { keepVisible } from '../run/visibility';

/**
 * `sleep` and `wait_for_event` (docs/agents-in-time.md): the workflow waits with one timer, no activity
 * and no worker slot, and the run reports `waiting` with the time it wakes. An event already held is
 * taken at once; a new user message ends the wait early (the result says so); an abort cancels it with
 * the batch's scope, and the call gets the abort's cancellation result like any unfinished call. Wait
 * times are workflow time: a replay takes the same decisions.
 */
export async function runWait(run: Run, call: ToolCallRequest, eventIteration: number): Promise<WorkflowCallResult> {
  const startedMs = Date.now();
  const args = repairToolArguments(call.arguments);
  const tool = call.name === WAIT_FOR_EVENT_TOOL ? WAIT_FOR_EVENT_TOOL : SLEEP_TOOL;
  if (!args.ok) return failedCall(call, 'Tool arguments are not a valid JSON object', 0, args.text);
  const settings = run.settings.waits;
  if (!settings) return failedCall(call, 'this agent has no waits', 0, args.text);
  const plan = waitPlan(tool, args.value, startedMs, settings);
  if ('problem' in plan) return failedCall(call, plan.problem, 0, args.text);
  const held = plan.tool === WAIT_FOR_EVENT_TOOL ? takeHeldEvent(run.durable.held_events, plan.event) : undefined;
  if (held) return succeededCall(call, waitResultText(plan, { woke: 'event', event: held }, times(plan, startedMs)), 0);
  const wait = inProgress(call, plan);
  run.live.waits.push(wait);
  emit(run, { event_type: 'wait_started', tool_name: call.name, ...wait }, eventIteration);
  keepVisible(run);
  setCurrentDetails(waitDetails(run));
  try {
    const outcome = await waitFor(run, plan);
    const now = Date.now();
    emit(
      run,
      {
        event_type: 'wait_ended',
        tool_name: call.name,
        tool_call_id: call.id,
        woke: outcome.woke,
        waited_ms: now - startedMs,
        ...(outcome.woke === 'event' ? { event: outcome.event.name } : {}),
      },
      eventIteration,
    );
    return succeededCall(call, waitResultText(plan, outcome, times(plan, startedMs)), now - startedMs);
  } finally {
    run.live.waits = run.live.waits.filter((entry) => entry !== wait);
    keepVisible(run);
    if (run.live.waits.length > 0) setCurrentDetails(waitDetails(run));
  }
}

/**
 * Waits until the plan's time, its event or a new user message, whichever comes first. One timer (the
 * condition's timeout); the run's messages and deliveries are read when they change the workflow's state.
 */
async function waitFor(run: Run, plan: WaitPlan): Promise<WaitOutcome> {
  const messagesAt = run.durable.next_inbox_id;
  let event: WaitOutcome | undefined;
  const woken = () => {
    if (plan.tool === WAIT_FOR_EVENT_TOOL && !event) {
      const taken = takeHeldEvent(run.durable.held_events, plan.event);
      if (taken) event = { woke: 'event', event: taken };
    }
    return event !== undefined || run.durable.next_inbox_id !== messagesAt;
  };
  const remaining = plan.wake_at_ms - Date.now();
  if (remaining > 0 && !woken()) await condition(woken, remaining);
  return event ?? (run.durable.next_inbox_id !== messagesAt ? { woke: 'user_message' } : { woke: 'time' });
}

/** The wait's times by the workflow's clock (stable under replay). */
function times(plan: WaitPlan, startedMs: number): WaitTimes {
  const now = Date.now();
  return { waited_ms: now - startedMs, now: iso(now), wake_at: iso(plan.wake_at_ms) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function inProgress(call: ToolCallRequest, plan: WaitPlan): WaitInProgress {
  return {
    tool_call_id: call.id,
    tool: plan.tool,
    wake_at: iso(plan.wake_at_ms),
    ...(plan.tool === WAIT_FOR_EVENT_TOOL ? { event: plan.event } : { reason: plan.reason }),
  };
}

/** What the UI's current details say while the run waits: the earliest wake, and why. */
function waitDetails(run: Run): string {
  const next = earliestWait(run)!;
  const what = next.event ? `for event '${next.event}'` : next.reason ? `(${next.reason})` : '';
  return `waiting until ${next.wake_at} ${what}`.trim();
}
