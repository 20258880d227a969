import { randomUUID } from 'node:crypto';
import { RequestMalformedError } from '@a2a-js/sdk/errors';

/** What a context id a caller names may hold: it goes into task ids and into visibility queries. */
const CONTEXT_ID = /^[A-Za-z0-9._-]{1,100}$/;

/**
 * A task is a run: its id is the run's workflow id, `CONTEXT~SUFFIX`. The context is in the id itself,
 * so the gateway finds a context's tasks in Temporal's visibility store and keeps nothing of its own.
 */
export function newTaskId(contextId: string): string {
  return `${contextId}~${randomUUID().slice(0, 8)}`;
}

/** A new conversation's context id. */
export function newContextId(): string {
  return `ctx-${randomUUID()}`;
}

/** The context of a task: the part of its id before `~` (a run started otherwise is its own context). */
export function contextOf(taskId: string): string {
  const at = taskId.lastIndexOf('~');
  return at > 0 ? taskId.slice(0, at) : taskId;
}

/** A context id a caller sent, checked; an error in the protocol's words otherwise. */
export function checkedContextId(contextId: string): string {
  if (!CONTEXT_ID.test(contextId))
    throw new RequestMalformedError(
      `a contextId is 1 to 100 letters, digits, '.', '_' or '-' (not ${JSON.stringify(contextId.slice(0, 120))})`,
    );
  return contextId;
}
