import { describe, expect, it } from 'vitest';
import { ResponseTimeline, type ResponseHead } from '../../src/gateway/responses/response-timeline';
import type { ResponsesStreamEvent } from '../../src/gateway/responses/wire';
import type { RunEvent, StreamEvent } from '../../src/runtime';

const head: ResponseHead = {
  id: 'resp_1',
  created_at: 1,
  model: 'assistant',
  background: true,
  previous_response_id: null,
  metadata: {},
};
const event = (seq: number, fields: Record<string, unknown>) => ({ seq, ...fields }) as unknown as RunEvent;
const chunk = (text: string, attempt = 0) =>
  ({ event_type: 'llm_chunk_arrive', llm_call: 1, attempt, chunk: text }) as unknown as StreamEvent;
const end = { status: 'completed', usage: null, error: null, answer: 'Hello world' } as const;

/** A run that answers "Hello world" in one model call, its tokens cut as `cuts` (none: read after it ended). */
function play(cuts: StreamEvent[], startingAfter = -1): ResponsesStreamEvent[] {
  const sent: ResponsesStreamEvent[] = [];
  const timeline = new ResponseTimeline(head, (streamed) => sent.push(streamed), startingAfter);
  timeline.begin();
  timeline.event(event(1, { event_type: 'react_start' }));
  timeline.event(event(2, { event_type: 'llm_call_start', llm_call: 1 }));
  for (const cut of cuts) timeline.chunk(cut);
  timeline.event(event(3, { event_type: 'llm_call_end', llm_call: 1, content: 'Hello world', outcome: 'completed' }));
  timeline.event(event(4, { event_type: 'react_end' }));
  timeline.finish(end);
  return sent;
}
const text = (events: ResponsesStreamEvent[]) =>
  events.map((streamed) => (streamed.type === 'response.output_text.delta' ? String(streamed['delta']) : '')).join('');
const framing = (events: ResponsesStreamEvent[]) =>
  events
    .filter((streamed) => streamed.type !== 'response.output_text.delta')
    .map((streamed) => streamed.sequence_number);

describe('a response stream numbered from the run event cursor', () => {
  const live = play([chunk('Hel'), chunk('lo '), chunk('world')]);

  it('tells the answer once, live, with increasing numbers', () => {
    expect(text(live)).toBe('Hello world');
    expect(live.map((streamed) => streamed.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const numbers = live.map((streamed) => streamed.sequence_number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
  });

  it('resumed after any number, however the tokens are cut on the second read, gives every later event once', () => {
    const points = [-1, ...live.map((streamed) => streamed.sequence_number)];
    // Numbers inside a delta: a reader that saw part of its text.
    points.push(2 * 10_000_000 + 10 + 1, 2 * 10_000_000 + 10 + 7);
    for (const cuts of [[chunk('Hel'), chunk('lo '), chunk('world')], [chunk('H'), chunk('ello w'), chunk('orld')], []])
      for (const after of points) {
        const seen = live.filter((streamed) => streamed.sequence_number <= after);
        const partial =
          after > 2 * 10_000_000 + 10 && after < 3 * 10_000_000
            ? 'Hello world'.slice(0, after - 2 * 10_000_000 - 10)
            : text(seen);
        const rest = play(cuts, after);
        expect(partial + text(rest), `after ${after}`).toBe('Hello world');
        expect([...framing(seen), ...framing(rest)], `after ${after}`).toEqual(framing(live));
        expect(rest.every((streamed) => streamed.sequence_number > after)).toBe(true);
      }
  });

  it('a retried attempt streams again from its start: its repeated text is not sent twice', () => {
    const retried = play([chunk('Hel'), chunk('Hel', 1), chunk('lo world', 1)]);
    expect(text(retried)).toBe('Hello world');
  });
});
