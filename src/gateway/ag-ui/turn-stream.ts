import { EventType, PROTOCOL_VERSION, type BaseEvent, type Message as AguiMessage } from '@ag-ui/core';
import type { Response } from 'express';
import type { RunHandle } from '../../client/patchloop-client';
import { followRunEvents } from '../../client/follow';
import type { RunEvent, RunStatus } from '../../runtime';
import { POSITION_BLOCK } from '../stream-positions';
import { statePosition, TurnTimeline, type TurnEnd } from './turn-timeline';

/** One event as Server-Sent Events frame it: its position as the `id`, when it has one. */
export function sseFrame(event: object, position: number | null = null): string {
  return `${position === null ? '' : `id: ${position}\n`}data: ${JSON.stringify(event)}\n\n`;
}

/** A comment line this often keeps proxies from closing a stream that waits (a long tool, a durable wait). */
const KEEPALIVE_MS = 15_000;
/** How long the stream's end waits for the run's status before it ends without it. */
const STATUS_WAIT_MS = 5_000;

/** Which AG-UI run a stream tells, and from where in its thread's session. */
export interface TurnStreamStart {
  threadId: string;
  runId: string;
  /** The event the turn comes after (the previous turn's end): the timeline reads from there. */
  turnStart: number;
  /** Positions the reader has (its `Last-Event-ID`, or an answered interrupt's end); -1: none. */
  after: number;
  /** The conversation before the turn, for a reader that has none of its own (a connect). */
  messages?: AguiMessage[];
  /** No turn to follow (a connect to a thread with no run in progress): the stream ends after the messages. */
  idle?: boolean;
}

/**
 * The turn a reader joins at `position` starts after the last turn that ended before that event:
 * `react_end` or `turn_failed` (a thread runs one turn at a time). The session's log holds its latest
 * 2,000 events: a turn longer than that is read from where its log starts.
 */
export function turnStartOf(events: readonly RunEvent[], seq: number): number {
  let start = 0;
  for (const event of events) {
    if (event.seq >= seq) break;
    if (event.event_type === 'react_end' || event.event_type === 'turn_failed') start = event.seq;
  }
  return start;
}

/** The run's state as AG-UI's state snapshot tells it: where it stands, what it used, its budget. */
function stateOf(status: RunStatus): Record<string, unknown> {
  return {
    status: status.state,
    iteration: status.iteration,
    llm_calls: status.llm_calls,
    tool_calls: status.tool_calls,
    usage: status.usage,
    budget: status.budget,
    pending_approvals: status.pending_approvals.map((pending) => pending.tool_call_id),
  };
}

async function statusWithin(handle: RunHandle): Promise<RunStatus | undefined> {
  const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), STATUS_WAIT_MS).unref());
  return Promise.race([handle.status(0, 1, 1).catch(() => undefined), timeout]);
}

/** The run's last event: how its turn ended, or the interrupt it waits on. */
function lastEvent(start: TurnStreamStart, outcome: TurnEnd): BaseEvent {
  const ids = { threadId: start.threadId, runId: start.runId };
  if (outcome.type === 'error')
    return { type: EventType.RUN_ERROR, message: outcome.message, code: outcome.code } as BaseEvent;
  if (outcome.type === 'success')
    return { type: EventType.RUN_FINISHED, ...ids, outcome: { type: 'success' }, result: outcome.answer } as BaseEvent;
  if (outcome.type === 'cancelled')
    return { type: EventType.RUN_FINISHED, ...ids, outcome: { type: 'cancelled' } } as BaseEvent;
  return {
    type: EventType.RUN_FINISHED,
    ...ids,
    outcome: { type: 'interrupt', interrupts: outcome.interrupts },
  } as BaseEvent;
}

/**
 * Streams an AG-UI run (Server-Sent Events): `RUN_STARTED`, the run's state, then its turn's events
 * after `start.after` (each with its position as the SSE `id`, so a reader that lost the connection
 * re-attaches with `Last-Event-ID` and gets exactly the rest), until the turn ends or waits for
 * decisions; the state again and the last event. A reader that goes away leaves the run going.
 */
export async function streamTurn(response: Response, handle: RunHandle, start: TurnStreamStart): Promise<void> {
  response
    .status(200)
    .set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
  response.flushHeaders();
  const stop = new AbortController();
  response.on('close', () => stop.abort());
  const write = (event: BaseEvent, position: number | null) => {
    if (!response.writableEnded) response.write(sseFrame(event, position));
  };
  const keepalive = setInterval(() => response.write(': keepalive\n\n'), KEEPALIVE_MS);
  try {
    write(
      {
        type: EventType.RUN_STARTED,
        threadId: start.threadId,
        runId: start.runId,
        protocolVersion: PROTOCOL_VERSION,
      } as BaseEvent,
      null,
    );
    if (start.messages) write({ type: EventType.MESSAGES_SNAPSHOT, messages: start.messages } as BaseEvent, null);
    const status = await statusWithin(handle);
    if (status) write({ type: EventType.STATE_SNAPSHOT, snapshot: stateOf(status) } as BaseEvent, null);
    if (start.idle) {
      const ids = { threadId: start.threadId, runId: start.runId };
      write({ type: EventType.RUN_FINISHED, ...ids, outcome: { type: 'success' } } as BaseEvent, null);
      return;
    }
    const timeline = new TurnTimeline(write, start.after);
    const output = {
      event: (event: RunEvent) => {
        timeline.event(event);
        if (timeline.end) stop.abort();
      },
      chunk: timeline.chunk.bind(timeline),
    };
    const caughtUp = () => {
      timeline.caughtUp();
      if (timeline.end) stop.abort();
    };
    await followRunEvents(handle, output, {
      after: start.turnStart,
      children: false,
      signal: stop.signal,
      onCaughtUp: caughtUp,
    });
    const end = timeline.end;
    if (end) {
      const last = await statusWithin(handle);
      if (last && statePosition(end) > start.after)
        write({ type: EventType.STATE_SNAPSHOT, snapshot: stateOf(last) } as BaseEvent, statePosition(end));
      write(lastEvent(start, end.outcome), end.position);
    } else if (!response.destroyed) {
      // The session closed under the turn (terminated, or failed): nothing more will come.
      write(
        {
          type: EventType.RUN_ERROR,
          message: 'the thread’s session ended before the run did',
          code: 'session_ended',
        } as BaseEvent,
        null,
      );
    }
  } finally {
    clearInterval(keepalive);
    response.end();
  }
}

/** A `Last-Event-ID` this endpoint gave: a position (whole, not negative); undefined when it is not one. */
export function positionFromEventId(header: string): number | undefined {
  if (!/^\d{1,16}$/.test(header.trim())) return undefined;
  const position = Number(header.trim());
  return Number.isSafeInteger(position) ? position : undefined;
}

/** The event `seq` a position belongs to. */
export function seqOfPosition(position: number): number {
  return Math.floor(position / POSITION_BLOCK);
}
