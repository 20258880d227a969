import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { failure, FailureType, sendUpdate } from '../common';
import type { TurnReply } from '../runtime';
import { startHeartbeat } from './activity-context';

export interface SendToSessionInput {
  session_id: string;
  content: string;
  /** The fire's id: a retried attempt re-attaches to the turn its first attempt started. */
  update_id: string;
}

/**
 * A schedule's fire to a long-lived session: its input as a user message (update `send`), answered
 * with the turn's reply. A workflow cannot send an update, so an activity does, and waits for the turn.
 * A session that does not exist or has ended fails the fire at once (`UnknownSession`).
 */
export async function sendToSession(input: SendToSessionInput): Promise<TurnReply> {
  const context = Context.current();
  const handle = context.client.workflow.getHandle(input.session_id);
  const stopHeartbeat = startHeartbeat(context, () => ({ session: input.session_id }), 5000);
  try {
    let description;
    try {
      description = await handle.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError)
        throw failure(FailureType.UnknownSession, `no session with id '${input.session_id}'`);
      throw error;
    }
    if (description.type !== 'chatSession')
      throw failure(FailureType.UnknownSession, `'${input.session_id}' is a ${description.type}, not a chatSession`);
    if (description.status.name !== 'RUNNING')
      throw failure(
        FailureType.UnknownSession,
        `session '${input.session_id}' has ended (${description.status.name.toLowerCase()})`,
      );
    try {
      return await handle.executeUpdate(sendUpdate, { args: [{ content: input.content }], updateId: input.update_id });
    } catch (error) {
      // The session's validator refused the message (too large, closing): sending it again cannot help.
      if (error instanceof WorkflowUpdateFailedError)
        throw failure(FailureType.UpdateRefused, error.cause?.message ?? error.message);
      throw error;
    }
  } finally {
    stopHeartbeat();
  }
}
