import { Context } from '@temporalio/activity';
import { failure, FailureType } from '../common';
import type { NotificationBody, NotifyDelivered, NotifyDeliveryInput } from '../runtime';
import { postToReceiver } from './receiver-post';

/** The links a worker knows for a run (its console page, its Temporal UI page), for the body's `links`. */
export type NotifyLinks = (workflowId: string) => NotificationBody['links'];

/**
 * The activity `deliverNotification`: POSTs the body, signed with `Patchloop-Signature` keyed by the
 * value of the variable `secret_env` names, classified as every delivery is (`postToReceiver`); an unset
 * key variable cannot sign it (`NotifySecretMissing`). The key is read from the worker's environment at
 * each attempt: it never enters a run's history.
 */
export function createDeliverNotification(links: NotifyLinks, env: NodeJS.ProcessEnv = process.env) {
  return async function deliverNotification(input: NotifyDeliveryInput): Promise<NotifyDelivered> {
    const secret = env[input.secret_env];
    if (!secret)
      throw failure(
        FailureType.NotifySecretMissing,
        `notify.secret_env names ${input.secret_env}, which is not set in the worker's environment: the notification cannot be signed`,
        { details: [{ attempt: Context.current().info.attempt }] },
      );
    const found = links(input.body.workflow_id);
    const text = JSON.stringify(found && Object.keys(found).length > 0 ? { ...input.body, links: found } : input.body);
    return postToReceiver({
      url: input.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'patchloop-notify',
        'patchloop-delivery': input.body.delivery_id,
      },
      body: text,
      signingKey: secret,
    });
  };
}
