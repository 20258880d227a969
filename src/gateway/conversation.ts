import type { Message } from '../context';
import type { RunHandle } from '../client/patchloop-client';

/**
 * What an ended run leaves for the next run of a conversation to go on from (an A2A context's next task,
 * a response's `previous_response_id`): its transcript without its system messages, since the next run's
 * agent brings its own instructions. The caller checks that the run has ended.
 */
export async function conversationAfter(run: Pick<RunHandle, 'transcript'>): Promise<Message[]> {
  return (await run.transcript()).filter((message) => message['role'] !== 'system');
}
