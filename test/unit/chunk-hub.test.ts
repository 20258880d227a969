import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/streaming/chunk';
import { ChunkHub } from '../../src/streaming/chunk-hub';
import { chunkEvent, endEvent, eventLabel } from '../support/chunk-events';

const chunk = (llm_call: number, attempt: number, chunk_index: number) => chunkEvent(llm_call, attempt, chunk_index);
const end = endEvent;
const label = eventLabel;

/** Reads one event at a time, so a test knows exactly what the subscriber has consumed. */
function reader(iterable: AsyncIterable<StreamEvent>): (count: number) => Promise<string[]> {
  const iterator = iterable[Symbol.asyncIterator]();
  return async (count) => {
    const seen: string[] = [];
    while (seen.length < count) seen.push(label((await iterator.next()).value as StreamEvent));
    return seen;
  };
}

async function take(iterable: AsyncIterable<StreamEvent>, count: number): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of iterable) {
    seen.push(label(event));
    if (seen.length === count) break;
  }
  return seen;
}

describe('ChunkHub (the embedded side channel)', () => {
  it('replays the prefix from an offset, then goes on live into the next call', async () => {
    const hub = new ChunkHub();
    hub.publish(chunk(1, 1, 0));
    hub.publish(chunk(1, 1, 1));
    const reading = take(hub.subscribe('r', { llm_call: 1, chunk_index: 1 }, new AbortController().signal), 4);
    hub.publish(end(1, 1, 2));
    hub.publish(chunk(2, 1, 0));
    hub.publish(chunk(2, 1, 1));
    expect(await reading).toEqual(['c1.1.1', 'end1.1', 'c2.1.0', 'c2.1.1']);
  });

  it('restarts a call from chunk 0 when a retried attempt streams it again', async () => {
    const hub = new ChunkHub();
    const read = reader(hub.subscribe('r', { llm_call: 1, chunk_index: 0 }, new AbortController().signal));
    hub.publish(chunk(1, 1, 0));
    hub.publish(chunk(1, 1, 1));
    expect(await read(2)).toEqual(['c1.1.0', 'c1.1.1']);
    hub.publish(chunk(1, 2, 0));
    hub.publish(chunk(1, 2, 1));
    hub.publish(end(1, 2, 2));
    expect(await read(3)).toEqual(['c1.2.0', 'c1.2.1', 'end1.2']);
    // A late chunk of the older attempt is dropped.
    hub.publish(chunk(1, 1, 2));
    expect(await take(hub.subscribe('r', { llm_call: 1, chunk_index: 0 }, new AbortController().signal), 3)).toEqual([
      'c1.2.0',
      'c1.2.1',
      'end1.2',
    ]);
  });

  it('keeps only the last calls of a run and stops a subscriber on abort', async () => {
    const hub = new ChunkHub(2);
    for (const call of [1, 2, 3]) {
      hub.publish(chunk(call, 1, 0));
      hub.publish(end(call, 1, 1));
    }
    expect(await take(hub.subscribe('r', { llm_call: 1, chunk_index: 0 }, new AbortController().signal), 2)).toEqual([
      'c2.1.0',
      'end2.1',
    ]);
    const abort = new AbortController();
    const reading = take(hub.subscribe('r', { llm_call: 4, chunk_index: 0 }, abort.signal), 1);
    abort.abort();
    expect(await reading).toEqual([]);
  });

  it('after a failed attempt stays on the call and reads the next attempt from its start', async () => {
    const hub = new ChunkHub();
    const read = reader(hub.subscribe('r', { llm_call: 1, chunk_index: 0 }, new AbortController().signal));
    hub.publish(chunk(1, 1, 0));
    hub.publish(chunk(1, 1, 1));
    hub.publish(end(1, 1, 2, 'failed'));
    expect(await read(3)).toEqual(['c1.1.0', 'c1.1.1', 'failed1.1']);
    hub.publish(chunk(1, 2, 0));
    hub.publish(end(1, 2, 1));
    hub.publish(chunk(2, 1, 0));
    expect(await read(3)).toEqual(['c1.2.0', 'end1.2', 'c2.1.0']);
  });

  it('an offset of an attempt waits for that attempt and skips to a newer one', async () => {
    const hub = new ChunkHub();
    hub.publish(chunk(1, 1, 0));
    hub.publish(end(1, 1, 1, 'failed'));
    // Resuming after the failed end: attempt 1 is not read again.
    const reading = take(
      hub.subscribe('r', { llm_call: 1, chunk_index: 0, attempt: 2 }, new AbortController().signal),
      2,
    );
    await expect.poll(() => hub.size.listeners).toBe(1);
    hub.publish(chunk(1, 2, 0));
    hub.publish(chunk(1, 2, 1));
    expect(await reading).toEqual(['c1.2.0', 'c1.2.1']);
    // An offset inside attempt 2 when attempt 3 has replaced it: attempt 3 from its start.
    hub.publish(chunk(1, 3, 0));
    expect(
      await take(hub.subscribe('r', { llm_call: 1, chunk_index: 5, attempt: 2 }, new AbortController().signal), 1),
    ).toEqual(['c1.3.0']);
  });

  it('waiting for an unknown run allocates nothing once the follower leaves', async () => {
    const hub = new ChunkHub();
    const abort = new AbortController();
    const reading = take(hub.subscribe('nobody', { llm_call: 1, chunk_index: 0 }, abort.signal), 1);
    await expect.poll(() => hub.size).toEqual({ runs: 0, listeners: 1 });
    abort.abort();
    expect(await reading).toEqual([]);
    expect(hub.size).toEqual({ runs: 0, listeners: 0 });
  });

  it('a final failure (not retrying) ends the call; a retry that streams elsewhere does not hold the follower', async () => {
    const hub = new ChunkHub();
    const read = reader(hub.subscribe('r', { llm_call: 1, chunk_index: 0 }, new AbortController().signal));
    hub.publish(chunk(1, 1, 0));
    hub.publish({ ...end(1, 1, 1, 'failed'), retrying: false } as StreamEvent);
    hub.publish(chunk(2, 1, 0));
    expect(await read(3)).toEqual(['c1.1.0', 'failed1.1', 'c2.1.0']);
    // Call 2 fails retrying, its retry runs on another worker; call 3 shows up here: move on to it.
    hub.publish(end(2, 1, 1, 'failed'));
    hub.publish(chunk(3, 1, 0));
    expect(await read(2)).toEqual(['failed2.1', 'c3.1.0']);
  });

  it('lets a follower go when the run has been silent for the idle time', async () => {
    const hub = new ChunkHub(4, 50);
    expect(
      await take(hub.subscribe('quiet', { llm_call: 1, chunk_index: 0 }, new AbortController().signal), 1),
    ).toEqual([]);
    expect(hub.size.listeners).toBe(0);
  });
});
