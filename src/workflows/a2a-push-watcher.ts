import { continueAsNew, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FailureType } from '../common';
import {
  A2A_PUSH_KEPT_DELIVERIES,
  a2aPushDeliveryId,
  A2aPushWatcherInput,
  hostOf,
  NOTIFY_GIVE_UP_SECONDS,
  NOTIFY_MAX_RETRY_INTERVAL_SECONDS,
  type A2aPushDelivery,
  type A2aPushWatcherResult,
} from '../runtime';
import { gaveUp } from './delivery-give-up';
import { parseWorkflowInput } from './run/input';

/** How long one wait for the task's next change lasts before the watcher asks again. */
const WAIT_SECONDS = 300;
/** The wait after a delivery's first failed attempt (the waits double up to an hour, for a day). */
const RETRY_INITIAL_SECONDS = 2;
/** Waits and deliveries one execution makes before it continues as new (its history stays small). */
const STEPS_PER_EXECUTION = 200;

/**
 * A task's push-notification config, delivered (`<taskId>/a2a-push/<configId>`, started by the gateway's
 * `CreateTaskPushNotificationConfig`): follows the task's run (`awaitTaskChange`, which waits on its
 * event log) and POSTs each change of state to the config's URL (`deliverA2aPush`, tried again with
 * doubling waits for a day), one after the other, in order. It ends once the final state is delivered;
 * `DeleteTaskPushNotificationConfig` cancels it. A delivery the receiver refuses, or that finds no
 * receiver for a day, fails it with the last attempt's error: later changes would arrive out of order.
 * Runs without a config have no watcher: nothing here costs them anything.
 */
export async function a2aPushWatcher(rawInput: unknown): Promise<A2aPushWatcherResult> {
  const input = parseWorkflowInput(A2aPushWatcherInput, rawInput, 'a2aPushWatcher');
  const { awaitTaskChange } = proxyActivities<Activities>({
    startToCloseTimeout: `${WAIT_SECONDS + 60}s`,
    heartbeatTimeout: '10s',
    summary: `wait for a change of task ${input.task_id}`,
    retry: { initialInterval: '1s', maximumInterval: '30s' },
  });
  const { deliverA2aPush } = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    scheduleToCloseTimeout: `${NOTIFY_GIVE_UP_SECONDS}s`,
    summary: `notify ${hostOf(input.config.url)} of a change of task ${input.task_id}`,
    retry: {
      initialInterval: `${RETRY_INITIAL_SECONDS}s`,
      backoffCoefficient: 2,
      maximumInterval: `${NOTIFY_MAX_RETRY_INTERVAL_SECONDS}s`,
      nonRetryableErrorTypes: [FailureType.NotifyRejected],
    },
  });
  let { after, state, deliveries, delivered } = input;
  for (let step = 0; step < STEPS_PER_EXECUTION; step++) {
    const change = await awaitTaskChange({
      task_id: input.task_id,
      context_id: input.context_id,
      after,
      state,
      wait_seconds: WAIT_SECONDS,
    });
    if (change.kind === 'ended') return { delivered, deliveries };
    after = change.after;
    if (change.kind === 'none') continue;
    const deliveryId = a2aPushDeliveryId(input.task_id, input.config.id, change.after);
    let outcome;
    try {
      outcome = await deliverA2aPush({ target: input.config, delivery_id: deliveryId, body: change.body });
    } catch (error) {
      throw isCancellation(error) ? error : gaveUp(error);
    }
    const record: A2aPushDelivery = { state: change.state, delivery_id: deliveryId, ...outcome };
    deliveries = [...deliveries, record].slice(-A2A_PUSH_KEPT_DELIVERIES);
    delivered += 1;
    state = change.state;
    if (change.final) return { delivered, deliveries };
  }
  // The same watcher, with where it stands: its history begins again.
  return continueAsNew<typeof a2aPushWatcher>({ ...input, after, state, deliveries, delivered });
}
