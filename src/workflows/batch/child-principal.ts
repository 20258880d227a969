import type { ChildWorkflowOptions } from '@temporalio/workflow';
import { PATCHLOOP_SEARCH_ATTRIBUTES as keys } from '../../common';
import type { AgentRunInputWire } from '../../runtime';
import type { Run } from '../run/run-state';

/**
 * What a child run (a sub-agent, a fork) inherits of its parent's principal: the input field, so that
 * its own children and continuations carry it on, and `PatchloopPrincipal`, so that the gateway lists and
 * finds it for that principal (and for no other). The parent's start set that attribute, so the
 * namespace has it. Nothing for a run started otherwise.
 */
export function childPrincipal(run: Run): {
  input: Pick<AgentRunInputWire, 'principal'>;
  options: Pick<ChildWorkflowOptions, 'typedSearchAttributes'>;
} {
  const principal = run.settings.principal;
  if (principal === null) return { input: {}, options: {} };
  return { input: { principal }, options: { typedSearchAttributes: [{ key: keys.principal, value: principal }] } };
}
