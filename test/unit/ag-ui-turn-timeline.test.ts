import type { BaseEvent } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import { TurnTimeline } from '../../src/gateway/ag-ui/turn-timeline';
import type { RunEvent, StreamEvent } from '../../src/runtime';

/** A turn's log: the fields the timeline reads (the rest of a real event does not matter to it). */
function log(...bodies: Array<Record<string, unknown>>): RunEvent[] {
  return bodies.map((body, index) => ({ seq: index + 11, iteration: 1, ...body }) as unknown as RunEvent);
}
const chunk = (text: string, attempt = 0) =>
  ({ event_type: 'llm_chunk_arrive', llm_call: 1, attempt, chunk: text }) as unknown as StreamEvent;

/** A turn that calls `transfer` (gated), then, once decided, answers. */
const gatedTurn = log(
  { event_type: 'user_message_received', content: 'Pay bob 5.' },
  { event_type: 'llm_call_start', llm_call: 1 },
  { event_type: 'llm_call_end', llm_call: 1, content: '', tool_calls: [{ id: 'p1', name: 'transfer' }] },
  { event_type: 'approval_requested', tool_call_id: 'p1', tool_name: 'transfer', arguments: { to: 'bob' } },
  { event_type: 'approval_decided', tool_call_id: 'p1', tool_name: 'transfer', approved: true },
  { event_type: 'tool_call_start', tool_call_id: 'p1', tool_name: 'transfer', arguments: { to: 'bob' } },
  { event_type: 'tool_call_end', tool_call_id: 'p1', tool_name: 'transfer', result: 'sent' },
  { event_type: 'react_iteration_end', iteration: 1 },
  { event_type: 'llm_call_start', llm_call: 2, iteration: 2 },
  { event_type: 'llm_call_end', llm_call: 2, iteration: 2, content: 'Sent.', tool_calls: [] },
  { event_type: 'react_end', iteration: 2, status: 'completed', final_response: 'Sent.' },
);

/** What a reader after `after` is sent: the events, each with its position (null: a re-opening start). */
function read(events: RunEvent[], after: number, chunks: Record<number, StreamEvent[]> = {}) {
  const sent: Array<[number | null, string, string?]> = [];
  const timeline = new TurnTimeline((event: BaseEvent, position) => {
    const fields = event as BaseEvent & { delta?: string };
    sent.push(fields.delta === undefined ? [position, event.type] : [position, event.type, fields.delta]);
  }, after);
  for (const event of events) {
    timeline.event(event);
    for (const one of chunks[event.seq] ?? []) timeline.chunk(one);
    if (timeline.end) break;
  }
  timeline.caughtUp();
  return { sent, end: timeline.end };
}

describe('an AG-UI turn timeline', () => {
  it('tells a gated call and stops at its request: the interrupt, with its position', () => {
    const { sent, end } = read(gatedTurn.slice(0, 4), -1);
    expect(sent).toEqual([
      [120_000_002, 'STEP_STARTED'],
      [140_000_003, 'TOOL_CALL_START'],
      [140_000_004, 'TOOL_CALL_ARGS', '{"to":"bob"}'],
      [140_000_005, 'TOOL_CALL_END'],
      [140_000_007, 'STEP_FINISHED'],
    ]);
    expect(end).toEqual({
      position: 140_000_009,
      outcome: {
        type: 'interrupt',
        interrupts: [expect.objectContaining({ id: 'p1', toolCallId: 'p1', reason: 'tool_approval' })],
      },
    });
    // Read again later (the decision came), it still stops there: the same run, the same end.
    expect(read(gatedTurn, -1).end).toEqual(end);
  });

  it('a resumed run goes on after the interrupt: the step again, the result, never the call again', () => {
    const { sent, end } = read(gatedTurn, 140_000_009);
    expect(sent).toEqual([
      [null, 'STEP_STARTED'],
      [170_000_003, 'TOOL_CALL_RESULT'],
      [180_000_001, 'STEP_FINISHED'],
      [190_000_002, 'STEP_STARTED'],
      [190_000_003, 'TEXT_MESSAGE_START'],
      [190_000_015, 'TEXT_MESSAGE_CONTENT', 'Sent.'],
      [200_000_001, 'TEXT_MESSAGE_END'],
      [210_000_007, 'STEP_FINISHED'],
    ]);
    expect(end).toEqual({ position: 210_000_009, outcome: { type: 'success', answer: 'Sent.' } });
  });

  it('a reader back inside a message gets its start again and only the characters it did not see', () => {
    const events = log(
      { event_type: 'llm_call_start', llm_call: 1 },
      { event_type: 'llm_call_end', llm_call: 1, content: 'Hello world', tool_calls: [] },
      { event_type: 'react_end', status: 'completed', final_response: 'Hello world' },
    );
    const chunks = { 11: [chunk('Hel'), chunk('lo wo'), chunk('rld')] };
    const whole = read(events, -1, chunks).sent;
    const deltas = (sent: Array<[number | null, string, string?]>) =>
      sent.filter(([, type]) => type === 'TEXT_MESSAGE_CONTENT').map(([, , delta]) => delta);
    expect(deltas(whole)).toEqual(['Hel', 'lo wo', 'rld']);
    // From every position the first stream reached, the second one sends the rest, each character once.
    for (const [position] of whole.filter(([at]) => at !== null)) {
      const before = deltas(whole.filter(([at]) => at !== null && at <= position!)).join('');
      const rest = read(events, position!, chunks).sent;
      expect(before + deltas(rest).join('')).toBe('Hello world');
      // Whatever the stream had open at that point it opens again first.
      if (position! >= 110_000_003 && position! < 120_000_001) expect(rest[1]).toEqual([null, 'TEXT_MESSAGE_START']);
    }
    // Read with no tokens at all (after the call), the same text at the same end.
    expect(deltas(read(events, -1).sent)).toEqual(['Hello world']);
  });

  it('a retried call that answers otherwise: the streamed message is superseded, the reply comes whole', () => {
    const events = log(
      { event_type: 'llm_call_start', llm_call: 1 },
      { event_type: 'llm_call_end', llm_call: 1, content: 'recovered', tool_calls: [] },
      { event_type: 'react_end', status: 'completed', final_response: 'recovered' },
    );
    const { sent } = read(events, -1, { 11: [chunk('partial '), chunk('rec', 1)] });
    expect(sent.map(([, type, delta]) => (delta ? `${type} ${delta}` : type))).toEqual([
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT partial ',
      'TEXT_MESSAGE_END',
      'CUSTOM',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT recovered',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
    ]);
  });

  it('a resume that answered part of the interrupt: the calls still undecided are the interrupt again', () => {
    const twoGated = log(
      { event_type: 'llm_call_start', llm_call: 1 },
      { event_type: 'llm_call_end', llm_call: 1, content: '', tool_calls: [] },
      { event_type: 'approval_requested', tool_call_id: 'a', tool_name: 'transfer', arguments: { to: 'ann' } },
      { event_type: 'approval_requested', tool_call_id: 'b', tool_name: 'transfer', arguments: { to: 'bo' } },
      { event_type: 'approval_decided', tool_call_id: 'b', tool_name: 'transfer', approved: false, reason: 'no' },
    );
    const first = read(twoGated.slice(0, 4), -1).end!;
    expect(first.outcome).toMatchObject({ type: 'interrupt', interrupts: [{ id: 'a' }, { id: 'b' }] });
    const { sent, end } = read(twoGated, first.position);
    expect(sent).toEqual([
      [null, 'STEP_STARTED'],
      [150_000_003, 'TOOL_CALL_RESULT'],
      [150_000_007, 'STEP_FINISHED'],
    ]);
    expect(end).toEqual({
      position: 150_000_009,
      outcome: { type: 'interrupt', interrupts: [expect.objectContaining({ id: 'a' })] },
    });
    // A reader back after that interrupt, with nothing decided since, is told it again (never a hang).
    expect(read(twoGated, end!.position).end?.outcome).toMatchObject({ type: 'interrupt', interrupts: [{ id: 'a' }] });
  });

  it('an answer longer than its end event holds (16 KB) streams whole: its rest from the turn’s end', () => {
    const answer = 'x'.repeat(20_000) + 'END';
    const events = log(
      { event_type: 'llm_call_start', llm_call: 1 },
      {
        event_type: 'llm_call_end',
        llm_call: 1,
        content: answer.slice(0, 16_384),
        content_chars: answer.length,
        tool_calls: [],
      },
      { event_type: 'react_end', status: 'completed', final_response: answer },
    );
    const text = (sent: Array<[number | null, string, string?]>) =>
      sent
        .filter(([, type]) => type === 'TEXT_MESSAGE_CONTENT')
        .map(([, , delta]) => delta)
        .join('');
    // Streamed live (all of it), read again without tokens, and re-attached past the first 16 KB.
    const live = read(events, -1, { 11: [chunk(answer)] }).sent;
    expect(text(live)).toBe(answer);
    expect(live.map(([, type]) => type)).not.toContain('CUSTOM');
    expect(text(read(events, -1).sent)).toBe(answer);
    const at = 110_000_010 + 18_000;
    expect(text(read(events, at).sent)).toBe(answer.slice(18_000));
  });

  it('a failed turn and an aborted one end with their own outcome', () => {
    const failed = read(log({ event_type: 'turn_failed', error_type: 'ProviderError', message: 'no' }), -1);
    expect(failed.end?.outcome).toEqual({ type: 'error', code: 'ProviderError', message: 'no' });
    const aborted = read(log({ event_type: 'react_end', status: 'aborted', final_response: '' }), -1);
    expect(aborted.end?.outcome).toEqual({ type: 'cancelled' });
  });
});
