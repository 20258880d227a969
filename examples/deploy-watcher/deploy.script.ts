import { modelScript, type ScriptStep, type TextMatch } from 'patchloop/testing';

/** The commit the build event names in the docs' example and in the test. */
export const COMMIT = 'abc123';
/** How long the model sleeps between two checks of the deploy. */
export const SLEEP_SECONDS = 3;

/** A tool result (JSON) with this string field, at any depth and however it is spaced. */
function field(name: string, value: string): TextMatch {
  return { matches: `"${name}":\\s*"${value}"` };
}

/** Checks the deploy, once the result before says what it waited for. */
function check(number: number, after: { name: string; content: TextMatch }): ScriptStep {
  return {
    name: `checks the deploy (${number})`,
    expect: { toolResults: [after] },
    callTools: [{ name: 'deploy_status', arguments: { commit: COMMIT } }],
  };
}

/** Sleeps, once the check before found the deploy still rolling out. */
function sleep(healthy: string): ScriptStep {
  return {
    name: `sleeps: ${healthy} healthy`,
    expect: { toolResults: [{ name: 'deploy_status', content: field('healthy', healthy) }] },
    callTools: [
      {
        name: 'sleep',
        arguments: { seconds: SLEEP_SECONDS, reason: `the deploy of ${COMMIT} is rolling out (${healthy})` },
      },
    ],
  };
}

const wokeOnTime = { name: 'sleep', content: field('woke', 'time') };

/**
 * What the model does in the offline test and in `npm run worker:offline`: it waits for the build
 * event, checks the deploy of the commit it names, sleeps between checks while the deploy rolls out, and
 * reports once it is green. Each step checks the request it answers; a request that does not fit fails
 * the run with a message naming the step.
 */
export const script = modelScript(
  [
    {
      name: 'waits for the build',
      expect: { tools: ['deploy_status', 'sleep', 'wait_for_event'] },
      callTools: [{ name: 'wait_for_event', arguments: { name: 'build', timeout_seconds: 3600 } }],
    },
    check(1, { name: 'wait_for_event', content: field('commit', COMMIT) }),
    sleep('1/3'),
    check(2, wokeOnTime),
    sleep('2/3'),
    check(3, wokeOnTime),
    {
      name: 'reports',
      expect: { toolResults: [{ name: 'deploy_status', content: field('state', 'green') }] },
      answer: `The deploy of ${COMMIT} is green: all 3 instances are healthy after 3 checks.`,
    },
  ],
  { name: 'deploy-watch' },
);
