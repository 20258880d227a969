import { condition } from '@temporalio/workflow';
import { deliverEventUpdate, FailureType } from '../../common';
import { deliveryProblem, rememberedKeys, utf8Bytes, type EventDelivered, type EventDelivery } from '../../runtime';
import { emit, type Run } from '../run/run-state';
import { setOnceUpdateHandler } from './update-ledger';
import { refusal } from './update-refusal';

/**
 * `deliver_event` (docs/agents-in-time.md): another service hands the run an event. The validator
 * refuses what the run cannot take (a name its agent does not wait for, a payload over the limit, a
 * full inbox, a key delivered before: `EventAlreadyDelivered`, which clients answer as a duplicate)
 * before anything is recorded; an accepted event is held in the durable part until a `wait_for_event`
 * for its name takes it (at once when one waits).
 */
export function registerEventDelivery(run: Run): void {
  setOnceUpdateHandler(
    run,
    deliverEventUpdate,
    async (payload) => {
      // An event delivered as the run starts waits until it knows its agent's waits.
      await condition(() => run.settings.waits !== undefined);
      if (isDuplicate(run, payload)) return answer(run, true, false);
      const checked = deliveryProblem(payload, run.settings.waits ?? null, run.durable.held_events.length);
      if ('problem' in checked) throw refusal(checked.problem);
      return deliver(run, checked.delivery);
    },
    {
      validator: (payload) => {
        if (!run.settings.acceptsMessages) throw refusal('this workflow takes no events');
        if (run.live.state !== 'running') throw refusal(`the run is ${run.live.state}`);
        if (run.live.abort.requested) throw refusal('the run is being aborted');
        // A repeat is refused as such before anything is recorded: it costs the run no history however
        // often it comes (clients answer it as delivered).
        if (isDuplicate(run, payload))
          throw refusal(
            `event key '${(payload as { key: string }).key}' was delivered already: nothing changed`,
            FailureType.EventAlreadyDelivered,
            [answer(run, true, false)],
          );
        // Before the run knows its agent, only the event's shape and size are checked here.
        const waits =
          run.settings.waits === undefined ? { max_seconds: 1, events: [eventName(payload)] } : run.settings.waits;
        const checked = deliveryProblem(payload, waits, run.durable.held_events.length);
        if ('problem' in checked) throw refusal(checked.problem);
      },
      description:
        'Deliver an event to a run waiting (or about to wait) for it: {"name": string, "payload": JSON, "key"?: string}.',
    },
  );
}

function eventName(payload: unknown): string {
  const name = (payload as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : '';
}

function isDuplicate(run: Run, payload: unknown): boolean {
  const key = (payload as { key?: unknown } | null)?.key;
  return typeof key === 'string' && run.durable.event_keys.includes(key);
}

function deliver(run: Run, delivery: EventDelivery): EventDelivered {
  const waiting = run.live.waits.some((wait) => wait.event === delivery.name);
  run.durable.held_events.push({
    name: delivery.name,
    payload: delivery.payload ?? null,
    ...(delivery.key !== undefined ? { key: delivery.key } : {}),
    received_at: new Date(Date.now()).toISOString(),
  });
  run.durable.event_keys = rememberedKeys(run.durable.event_keys, delivery.key);
  emit(run, {
    event_type: 'event_received',
    name: delivery.name,
    ...(delivery.key !== undefined ? { key: delivery.key } : {}),
    payload_bytes: utf8Bytes(JSON.stringify(delivery.payload ?? null)),
    taken_by_wait: waiting,
  });
  return answer(run, false, waiting);
}

function answer(run: Run, duplicate: boolean, taken: boolean): EventDelivered {
  // A wait takes its event when the workflow next checks its condition: not held from then on.
  const held = run.durable.held_events.length - (taken ? 1 : 0);
  return { accepted: true, duplicate, taken_by_wait: taken, held };
}
