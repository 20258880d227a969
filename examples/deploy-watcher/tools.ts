import { defineTool } from 'patchloop';
import { z } from 'zod';

/** A made-up deploy rolls out one instance per check: it is green at the third check. */
export const INSTANCES = 3;
/** The deploys this worker remembers (the oldest is forgotten first). */
const REMEMBERED_DEPLOYS = 1000;

/** The calls that checked each deploy (a run's deploy of a commit), in order. */
const checksByDeploy = new Map<string, string[]>();

/**
 * The check a call is: its place among the checks of its deploy. A retried call (the same idempotency
 * key) is the same check, so it gets the same answer.
 */
function checkNumber(deploy: string, idempotencyKey: string): number {
  const checks = checksByDeploy.get(deploy) ?? [];
  if (!checks.includes(idempotencyKey)) checks.push(idempotencyKey);
  checksByDeploy.delete(deploy);
  checksByDeploy.set(deploy, checks);
  if (checksByDeploy.size > REMEMBERED_DEPLOYS) checksByDeploy.delete(checksByDeploy.keys().next().value!);
  return checks.indexOf(idempotencyKey) + 1;
}

/**
 * The state of a commit's deploy. This one is made up and deterministic (each run watches a deploy of
 * its own, which turns green at its third check); a real tool would ask the deploy API, passing on
 * `signal` to stop when asked.
 */
export const deployStatus = defineTool({
  name: 'deploy_status',
  description: 'The state of the deploy of a commit: rolling_out (with how many instances are healthy) or green.',
  parameters: z.object({ commit: z.string().min(1).max(64).describe('The commit that was built, e.g. "abc123"') }),
  execute: ({ commit }, { workflowId, idempotencyKey }) => {
    const check = checkNumber(`${workflowId}/${commit}`, idempotencyKey);
    const healthy = Math.min(check, INSTANCES);
    return {
      commit,
      state: healthy === INSTANCES ? 'green' : 'rolling_out',
      healthy: `${healthy}/${INSTANCES}`,
      check,
    };
  },
});

/** What `patchloop worker --tools tools.ts` serves, and what worker.ts registers. */
export const tools = [deployStatus];
