import { makeContinueAsNewFunc, workflowInfo, type Workflow } from '@temporalio/workflow';
import type { AgentSpec, ContinueAsNewPolicy, LoggedRunEvent } from '../../runtime';
import { INLINE_PAYLOAD_BUDGET, payloadFits } from './payload-budget';
import { emit, eventLog, type Run } from './run-state';

/** Temporal suggests it, or the history passed the policy's size. */
export function continueAsNewDue(policy: ContinueAsNewPolicy): boolean {
  const info = workflowInfo();
  return (
    info.continueAsNewSuggested ||
    info.historyLength >= policy.max_history_events ||
    info.historySize >= policy.max_history_bytes
  );
}

/**
 * Worker Versioning: the server's current build for this pinned run is no longer the one it runs on
 * (false for unversioned workers).
 */
export function newBuildCurrent(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged === true;
}

/**
 * Continue-as-new, to the current build when it changed (`initialVersioningBehavior: AUTO_UPGRADE`: the
 * next run's first task goes to the current build, which it is then pinned to); else on this build.
 */
export function continueAsNewOnCurrentBuild<F extends Workflow>(): (...args: Parameters<F>) => Promise<never> {
  return newBuildCurrent()
    ? makeContinueAsNewFunc<F>({ initialVersioningBehavior: 'AUTO_UPGRADE' })
    : makeContinueAsNewFunc<F>();
}

/**
 * Whether the carried input may be sent: always with payloads by reference, else within the inline
 * budget. When it may not, the run goes on in this run (an event says so, once) and the agent has to
 * compact (`selfref_compact`).
 */
export function carriedInputFits(
  run: Run,
  agent: Pick<AgentSpec, 'payloads_by_reference'>,
  carried: unknown,
  warned: { skipped: boolean },
): boolean {
  const { fits, bytes } = payloadFits(agent, carried);
  if (fits) return true;
  if (!warned.skipped) {
    warned.skipped = true;
    emit(run, {
      event_type: 'custom_event',
      event_name: 'continue_as_new_skipped',
      data: { carried_bytes: bytes, limit_bytes: INLINE_PAYLOAD_BUDGET },
      tool_name: '',
      tool_call_id: '',
    });
  }
  return false;
}

/** The newest events, for the next run's log (`status` and `show` still tell the story). */
export function recentEvents(run: Run, most = 200, maxChars = 256 * 1024): LoggedRunEvent[] {
  const kept: LoggedRunEvent[] = [];
  let chars = 0;
  const events = eventLog(run);
  for (let index = events.length - 1; index >= 0 && kept.length < most; index -= 1) {
    chars += JSON.stringify(events[index]).length;
    if (chars > maxChars) break;
    kept.unshift(events[index]!);
  }
  return kept;
}
