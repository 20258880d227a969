import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { PATCHLOOP_SEARCH_ATTRIBUTES as keys } from '../../common';
import { reportedState, type Run } from './run-state';

/** Counters went out every this many iterations in runs recorded before `visible-on-state-change`. */
const ITERATIONS_PER_UPSERT = 10;

/**
 * Keeps the run's search attributes current (when its worker found them on the namespace): on a change
 * of state, with the counters of that moment, since each upsert is a billable action and listings filter
 * by state. `force` (the start of every run of a chain, each session turn) writes them when the
 * execution shows anything else: not when the client's start or the run before (continue-as-new) set
 * them already. Runs recorded before `visible-on-state-change` also wrote them every ten iterations.
 */
export function keepVisible(run: Run, force = false): void {
  const visibility = run.live.visibility;
  if (!visibility.enabled) return;
  const state = reportedState(run);
  const attributes = [
    { key: keys.agent, value: run.settings.agent },
    { key: keys.status, value: state },
    { key: keys.iterations, value: run.durable.iteration },
    { key: keys.toolCalls, value: run.durable.tool_calls },
    { key: keys.totalTokens, value: run.durable.usage?.total_tokens ?? 0 },
  ];
  if (visibility.onStateChange) {
    const shown = workflowInfo().typedSearchAttributes;
    const differs = attributes.some(
      ({ key, value }) => (shown.get(key) ?? (typeof value === 'number' ? 0 : null)) !== value,
    );
    if (force ? !differs : state === visibility.state) {
      visibility.state = state;
      return;
    }
  } else {
    const stale = run.durable.iteration - visibility.iteration >= ITERATIONS_PER_UPSERT;
    if (!force && state === visibility.state && !stale) return;
  }
  upsertSearchAttributes(attributes);
  visibility.state = state;
  visibility.iteration = run.durable.iteration;
}

/**
 * Decides, as the run opens and before anything it awaits, whether it keeps its attributes on a change of
 * state only: a patch asked after a local activity (the agent's resolution) would be recorded in a later
 * workflow task than a replay asks it in, when the activity's result came after its task had ended.
 */
export function decideVisibility(run: Run): void {
  run.live.visibility.onStateChange = patched('visible-on-state-change');
}

/**
 * A run that fails before it has opened (its agent unknown, its MCP servers unable to list their tools,
 * its limits refused) still shows as failed, for the agent it named, when its worker found patchloop's
 * search attributes on the namespace: `list --status failed` and the UI's filters then find it. The
 * run's own `keepVisible` on failing writes them. Runs recorded before this failed without them.
 */
export function visibleWhenFailing(run: Run, searchAttributes: boolean): void {
  if (run.live.visibility.enabled || !searchAttributes) return;
  if (!patched('failed-before-open-is-visible')) return;
  run.live.visibility.enabled = true;
}
