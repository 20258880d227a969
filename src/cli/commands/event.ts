import type { PatchloopClient } from '../../client/patchloop-client';
import type { JsonValue } from '../../context';
import { parseCommand } from '../arguments';
import { explainUnavailable } from '../preflight';
import { appliedByWorker } from '../worker-watch';
import { EVENT_SYNTAX } from '../syntax';

/**
 * `patchloop event <id> <name> [json] [--key K]`: the `deliver_event` update, as the temporal CLI and
 * the HTTP API send it too (docs/agents-in-time.md). The payload is the JSON text given (null without).
 */
export async function eventCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, EVENT_SYNTAX);
  const id = positionals['id']!;
  const name = positionals['name']!;
  const text = positionals['json'];
  const payload = text === undefined ? null : (JSON.parse(text) as JsonValue);
  const run = client.run(id);
  const key = values.key;
  const answer = await appliedByWorker(run, client.taskQueue, () =>
    run.deliverEvent(name, payload, key !== undefined ? { key } : {}),
  ).catch((error: unknown) => explainUnavailable(run, error, 'it takes no events'));
  return { workflow_id: id, name, ...answer };
}
