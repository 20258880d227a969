import { A2A_CONTENT_TYPE } from '@a2a-js/sdk';
import type { A2aPushDeliveryInput, NotifyDelivered } from '../runtime';
import { postToReceiver } from './receiver-post';

/**
 * The activity `deliverA2aPush`: POSTs one change of a task to a push-notification config's receiver,
 * as the A2A SDKs' senders do (the StreamResponse as JSON, `X-A2A-Notification-Token` with the config's
 * token, `Authorization` from its `authentication`), plus `Patchloop-Delivery` (the same on every attempt)
 * and, when the config has a token, `Patchloop-Signature` keyed by it. Classified as every delivery is
 * (`postToReceiver`).
 */
export async function deliverA2aPush(input: A2aPushDeliveryInput): Promise<NotifyDelivered> {
  const { target } = input;
  return postToReceiver({
    url: target.url,
    headers: {
      'content-type': A2A_CONTENT_TYPE,
      'user-agent': 'patchloop-a2a-push',
      'patchloop-delivery': input.delivery_id,
      ...(target.token ? { 'x-a2a-notification-token': target.token } : {}),
      ...(target.authentication
        ? { authorization: `${target.authentication.scheme} ${target.authentication.credentials}` }
        : {}),
    },
    body: input.body,
    signingKey: target.token || undefined,
  });
}
