import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FailureType } from '../common';
import {
  hostOf,
  NOTIFY_GIVE_UP_SECONDS,
  NOTIFY_MAX_RETRY_INTERVAL_SECONDS,
  NotifierInput,
  type NotifyDelivered,
} from '../runtime';
import { gaveUp } from './delivery-give-up';
import { parseWorkflowInput } from './run/input';

/** One attempt's activity bound, above the delivery's own HTTP timeout (10 s). */
const ATTEMPT_SECONDS = 30;

/**
 * The notifier an ending run starts (`<workflowId>/notify/<firstRunId>`, abandoned by its parent): it
 * delivers the run's end notification, tried again with doubling waits for a day, so that the run
 * itself closes at once. Its state is the delivery's (`RunHandle.notification()`): running and
 * retrying, completed with the delivery's time and attempts, or failed with the last attempt's error.
 */
export async function notifyRunEnd(rawInput: unknown): Promise<NotifyDelivered> {
  const input = parseWorkflowInput(NotifierInput, rawInput, 'notifyRunEnd');
  const { deliverNotification } = proxyActivities<Activities>({
    startToCloseTimeout: `${ATTEMPT_SECONDS}s`,
    scheduleToCloseTimeout: `${NOTIFY_GIVE_UP_SECONDS}s`,
    summary: `notify ${hostOf(input.url)} that ${input.body.workflow_id} ended`,
    retry: {
      initialInterval: `${input.retry_initial_seconds}s`,
      backoffCoefficient: 2,
      maximumInterval: `${NOTIFY_MAX_RETRY_INTERVAL_SECONDS}s`,
      nonRetryableErrorTypes: [FailureType.NotifyRejected, FailureType.NotifySecretMissing],
    },
  });
  try {
    return await deliverNotification({ url: input.url, secret_env: input.secret_env, body: input.body });
  } catch (error) {
    throw gaveUp(error);
  }
}
