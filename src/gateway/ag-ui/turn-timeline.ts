import { EventType, type BaseEvent, type Interrupt } from '@ag-ui/core';
import type { JsonObject } from '../../context';
import { rejectedCallContent, type RunEvent, type StreamEvent } from '../../runtime';
import { addedText, MOST_MESSAGE_CHARS, positionOf, textPosition, unseenPart } from '../stream-positions';

/**
 * What each event of a turn tells, at which offset of its block (`stream-positions.ts`). A tool call is
 * told whole at one event (its start, arguments and end), its result at the event that has it; a turn's
 * end closes what is open, then the state and the run's last event.
 */
const AT = {
  stepFinished: 1,
  stepStarted: 2,
  textStarted: 3,
  textEnded: 1,
  superseded: 2,
  supersedingStarted: 3,
  toolCallStart: 3,
  toolCallArgs: 4,
  toolCallEnd: 5,
  toolCallResult: 3,
  endText: 6,
  endStep: 7,
  endState: 8,
  end: 9,
} as const;

/** The answer an interrupt for a tool approval expects: a decision, and why. */
const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    approved: { type: 'boolean', description: 'Whether the tool call may run.' },
    reason: { type: 'string', description: 'Why (the model reads it when the call is rejected).' },
  },
  required: ['approved'],
} as const;

/** How an AG-UI run ends: its turn ended, or the turn waits for decisions (an interrupt). */
export type TurnEnd =
  | { type: 'success'; answer: string }
  | { type: 'cancelled' }
  | { type: 'interrupt'; interrupts: Interrupt[] }
  | { type: 'error'; code: string; message: string };

/** Where the stream stands: what it opened and has not closed, in the order it opened them. */
type Open =
  | { kind: 'step'; name: string }
  | { kind: 'text'; messageId: string }
  | { kind: 'tool'; toolCallId: string; toolCallName: string; parentMessageId?: string };

interface OpenCall {
  llmCall: number;
  startSeq: number;
  messageId: string;
  /** The text the message holds (what was sent as deltas), and whether its start was told. */
  text: string;
  started: boolean;
  /** The attempt being read and its text so far (a retried attempt streams again from its start). */
  attempt: number;
  attemptText: string;
}

/** The message id of the model call that started at event `startSeq` (unique in its thread). */
function messageIdOf(startSeq: number): string {
  return `patchloop-message-${startSeq}`;
}

/**
 * One session turn's events and tokens as AG-UI events, each at its position, sending only those after
 * `after` (and, first, the starts of what was open there, so that each stream stands on its own): text
 * messages from the model calls' tokens, tool calls with their arguments and results, a step per
 * iteration. It ends at the turn's end, or at the first group of approval requests after `after` (the
 * run's interrupt; a group at or before `after` was answered by a resume and is passed).
 */
export class TurnTimeline {
  /** Set when the timeline reached its end: the caller tells the state and `end.type`'s last event. */
  end: { position: number; outcome: TurnEnd } | undefined;
  private readonly open: Open[] = [];
  private reopened = false;
  private call: OpenCall | undefined;
  private iteration = -1;
  /** Tool calls already told (a gated call is told when it asks for approval, not again when it runs). */
  private readonly told = new Set<string>();
  private readonly parents = new Map<string, string>();
  /** The approval requests in a row not yet closed into an interrupt. */
  private requests: ApprovalRequest[] = [];
  /** The turn's approval requests not decided yet (a resume may answer part of them). */
  private readonly undecided = new Map<string, ApprovalRequest>();
  private lastSeq = 0;
  /** The turn's final answer as streamed, when its end event held only the start of it (over 16 KB). */
  private longAnswer: OpenCall | undefined;

  constructor(
    private readonly send: (event: BaseEvent, position: number | null) => void,
    private readonly after: number,
  ) {}

  event(event: RunEvent): void {
    if (this.end) return;
    this.lastSeq = event.seq;
    if (event.event_type !== 'approval_requested' && this.requests.length > 0) {
      this.closeRequests();
      if (this.end) return;
    }
    switch (event.event_type) {
      case 'llm_call_start':
        this.startStep(event);
        this.call = {
          llmCall: event.llm_call,
          startSeq: event.seq,
          messageId: messageIdOf(event.seq),
          text: '',
          started: false,
          attempt: -1,
          attemptText: '',
        };
        return;
      case 'llm_call_end':
        return this.endCall(event);
      case 'approval_requested':
        this.startStep(event);
        this.tell(event.seq, event.tool_call_id, event.tool_name, event.arguments);
        this.requests.push(event);
        this.undecided.set(event.tool_call_id, event);
        return;
      case 'approval_decided':
        this.undecided.delete(event.tool_call_id);
        if (!event.approved)
          this.result(event.seq, event.tool_call_id, rejectedCallContent(event.tool_name, event.reason));
        return;
      case 'tool_call_start':
        this.startStep(event);
        return this.tell(event.seq, event.tool_call_id, event.tool_name, event.arguments);
      case 'tool_call_end':
        return this.result(
          event.seq,
          event.tool_call_id,
          typeof event.result === 'string' ? event.result : JSON.stringify(event.result),
        );
      case 'tool_call_error':
        return this.result(event.seq, event.tool_call_id, event.error);
      case 'react_iteration_end':
        return this.finishStep(positionOf(event.seq, AT.stepFinished));
      case 'react_end':
        this.completeLongAnswer(event.final_response);
        return this.finish(event.seq, this.outcomeOf(event));
      case 'turn_failed':
        return this.finish(event.seq, { type: 'error', code: event.error_type, message: event.message });
      default:
        return;
    }
  }

  /**
   * The reader has every event there is for now: approval requests in a row are the run's interrupt;
   * requests a resume did not answer (it answered part of them, or the reader came back after the
   * interrupt) are one again, for those still undecided.
   */
  caughtUp(): void {
    if (!this.end && this.requests.length > 0) this.closeRequests();
    if (!this.end && this.undecided.size > 0)
      this.finish(this.lastSeq, { type: 'interrupt', interrupts: [...this.undecided.values()].map(interruptOf) });
  }

  /** A token of the call under way (the live stream). */
  chunk(chunk: StreamEvent): void {
    const call = this.call;
    if (this.end || chunk.event_type !== 'llm_chunk_arrive' || call?.llmCall !== chunk.llm_call) return;
    const added = addedText(call, chunk);
    if (added !== '') this.append(call, added);
  }

  private outcomeOf(event: Extract<RunEvent, { event_type: 'react_end' }>): TurnEnd {
    if (event.status === 'completed') return { type: 'success', answer: event.final_response };
    if (event.status === 'aborted') return { type: 'cancelled' };
    return { type: 'error', code: 'budget_exhausted', message: 'the run spent its budget before it answered' };
  }

  private emit(position: number, event: BaseEvent): void {
    if (position > this.after) {
      if (!this.reopened) {
        this.reopened = true;
        for (const open of this.open) this.send(startOf(open), null);
      }
      this.send(event, position);
    }
    this.track(event);
  }

  /** Keeps what is open as the stream tells it, whether this reader is sent it or not. */
  private track(event: BaseEvent): void {
    const fields = event as BaseEvent & Record<string, string>;
    if (event.type === EventType.STEP_STARTED) this.open.push({ kind: 'step', name: fields['stepName']! });
    if (event.type === EventType.TEXT_MESSAGE_START) this.open.push({ kind: 'text', messageId: fields['messageId']! });
    if (event.type === EventType.TOOL_CALL_START)
      this.open.push({
        kind: 'tool',
        toolCallId: fields['toolCallId']!,
        toolCallName: fields['toolCallName']!,
        ...(fields['parentMessageId'] ? { parentMessageId: fields['parentMessageId'] } : {}),
      });
    const closes: Partial<Record<EventType, Open['kind']>> = {
      [EventType.STEP_FINISHED]: 'step',
      [EventType.TEXT_MESSAGE_END]: 'text',
      [EventType.TOOL_CALL_END]: 'tool',
    };
    const at = this.open.findIndex((open) => open.kind === closes[event.type]);
    if (at >= 0) this.open.splice(at, 1);
  }

  private opened(kind: Open['kind']): boolean {
    return this.open.some((open) => open.kind === kind);
  }

  /** A step per iteration: opened by its first event that does something. */
  private startStep(event: RunEvent): void {
    if (event.iteration === this.iteration && this.opened('step')) return;
    if (this.opened('step')) this.finishStep(positionOf(event.seq, AT.stepFinished));
    this.iteration = event.iteration;
    this.emit(positionOf(event.seq, AT.stepStarted), {
      type: EventType.STEP_STARTED,
      stepName: `iteration ${event.iteration}`,
    } as BaseEvent);
  }

  private finishStep(position: number): void {
    const step = this.open.find((open) => open.kind === 'step');
    if (step?.kind === 'step') this.emit(position, { type: EventType.STEP_FINISHED, stepName: step.name } as BaseEvent);
  }

  private append(call: OpenCall, delta: string, startPosition = positionOf(call.startSeq, AT.textStarted)): void {
    const text = delta.slice(0, Math.max(0, MOST_MESSAGE_CHARS - call.text.length));
    if (text.length === 0) return;
    if (!call.started) {
      call.started = true;
      this.emit(startPosition, {
        type: EventType.TEXT_MESSAGE_START,
        messageId: call.messageId,
        role: 'assistant',
      } as BaseEvent);
    }
    const before = call.text.length;
    call.text += text;
    // A reader that resumes inside this delta has seen its first characters already.
    const unseen = unseenPart(this.after, call.startSeq, before, text);
    const position = textPosition(call.startSeq, call.text.length);
    if (unseen !== '')
      this.emit(position, {
        type: EventType.TEXT_MESSAGE_CONTENT,
        messageId: call.messageId,
        delta: unseen,
      } as BaseEvent);
  }

  private endCall(event: Extract<RunEvent, { event_type: 'llm_call_end' }>): void {
    const call = this.call;
    if (call?.llmCall !== event.llm_call) return;
    this.call = undefined;
    // An event holds the first 16 KB of a longer reply: the reply goes on as long as the two agree.
    const cut = event.content_chars !== undefined && event.content_chars > event.content.length;
    const continues = event.content.startsWith(call.text) || (cut && call.text.startsWith(event.content));
    if (continues && event.content.length > call.text.length) this.append(call, event.content.slice(call.text.length));
    // The final answer's rest comes with the turn's end (`react_end` holds it whole): its message stays open.
    if (continues && cut && event.tool_calls.length === 0) {
      this.longAnswer = call;
      return;
    }
    if (call.started)
      this.emit(positionOf(event.seq, AT.textEnded), {
        type: EventType.TEXT_MESSAGE_END,
        messageId: call.messageId,
      } as BaseEvent);
    let messageId = call.messageId;
    if (!continues) messageId = this.supersede(call, event.seq, event.content);
    for (const toolCall of event.tool_calls) this.parents.set(toolCall.id, messageId);
  }

  /** The rest of a final answer longer than its call's end event holds (`finish` closes its message). */
  private completeLongAnswer(answer: string): void {
    const call = this.longAnswer;
    this.longAnswer = undefined;
    if (call && answer.length > call.text.length && answer.startsWith(call.text))
      this.append(call, answer.slice(call.text.length));
  }

  /**
   * The call's reply is not what its tokens said so far (an attempt that streamed part of a reply
   * failed, and the retry answered otherwise): the streamed message is marked superseded
   * (`patchloop.message_superseded`, for a UI to drop it), and the reply comes whole as a message of
   * its own, at the call's end. Answers that message's id.
   */
  private supersede(call: OpenCall, endSeq: number, content: string): string {
    this.emit(positionOf(endSeq, AT.superseded), {
      type: EventType.CUSTOM,
      name: 'patchloop.message_superseded',
      value: { messageId: call.messageId, reason: 'the model call was tried again and answered otherwise' },
    } as BaseEvent);
    const reply: OpenCall = {
      ...call,
      startSeq: endSeq,
      messageId: `${call.messageId}-retried`,
      text: '',
      started: false,
    };
    this.append(reply, content, positionOf(endSeq, AT.supersedingStarted));
    if (reply.started)
      this.emit(textPosition(endSeq, reply.text.length) + 1, {
        type: EventType.TEXT_MESSAGE_END,
        messageId: reply.messageId,
      } as BaseEvent);
    return reply.messageId;
  }

  /** A tool call, whole, once: its start, its arguments as JSON, its end. */
  private tell(seq: number, toolCallId: string, toolCallName: string, args: JsonObject): void {
    if (this.told.has(toolCallId)) return;
    this.told.add(toolCallId);
    const parentMessageId = this.parents.get(toolCallId);
    this.emit(positionOf(seq, AT.toolCallStart), {
      type: EventType.TOOL_CALL_START,
      toolCallId,
      toolCallName,
      ...(parentMessageId ? { parentMessageId } : {}),
    } as BaseEvent);
    this.emit(positionOf(seq, AT.toolCallArgs), {
      type: EventType.TOOL_CALL_ARGS,
      toolCallId,
      delta: JSON.stringify(args),
    } as BaseEvent);
    this.emit(positionOf(seq, AT.toolCallEnd), { type: EventType.TOOL_CALL_END, toolCallId } as BaseEvent);
  }

  private result(seq: number, toolCallId: string, content: string): void {
    this.emit(positionOf(seq, AT.toolCallResult), {
      type: EventType.TOOL_CALL_RESULT,
      messageId: `patchloop-result-${toolCallId}`,
      toolCallId,
      content,
      role: 'tool',
    } as BaseEvent);
  }

  /** Approval requests in a row: the run waits for them (an interrupt), unless a resume answered them. */
  private closeRequests(): void {
    const requests = this.requests;
    this.requests = [];
    const last = requests.at(-1)!.seq;
    if (positionOf(last, AT.end) <= this.after) return;
    this.finish(last, { type: 'interrupt', interrupts: requests.map(interruptOf) });
  }

  /** Closes what is open; the caller sends the state and the last event (always: even a reader past it gets it). */
  private finish(seq: number, outcome: TurnEnd): void {
    const text = this.open.find((open) => open.kind === 'text');
    if (text?.kind === 'text')
      this.emit(positionOf(seq, AT.endText), {
        type: EventType.TEXT_MESSAGE_END,
        messageId: text.messageId,
      } as BaseEvent);
    this.finishStep(positionOf(seq, AT.endStep));
    this.end = { position: positionOf(seq, AT.end), outcome };
  }
}

type ApprovalRequest = Extract<RunEvent, { event_type: 'approval_requested' }>;

/** The interrupt of an approval request: its id is the tool call's; the answer a decision. */
function interruptOf(request: ApprovalRequest): Interrupt {
  return {
    id: request.tool_call_id,
    reason: 'tool_approval',
    message: `${request.tool_name} ${JSON.stringify(request.arguments)}: approve?`,
    toolCallId: request.tool_call_id,
    responseSchema: { ...APPROVAL_RESPONSE_SCHEMA },
  };
}

/** The event that opens what `open` stands for again, in a stream that starts inside it. */
function startOf(open: Open): BaseEvent {
  if (open.kind === 'step') return { type: EventType.STEP_STARTED, stepName: open.name } as BaseEvent;
  if (open.kind === 'text')
    return { type: EventType.TEXT_MESSAGE_START, messageId: open.messageId, role: 'assistant' } as BaseEvent;
  return {
    type: EventType.TOOL_CALL_START,
    toolCallId: open.toolCallId,
    toolCallName: open.toolCallName,
    ...(open.parentMessageId ? { parentMessageId: open.parentMessageId } : {}),
  } as BaseEvent;
}

/** The state position of an end (just before its last event). */
export function statePosition(end: { position: number }): number {
  return end.position - (AT.end - AT.endState);
}

/** Where the interrupt that ends at approval request `seq` has its last event: a resumed run goes on after it. */
export function interruptEndPosition(seq: number): number {
  return positionOf(seq, AT.end);
}
