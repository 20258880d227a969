import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Message } from '../context';
import type {
  ApprovalAccepted,
  ApprovalDecision,
  BudgetExtension,
  ChildApprovals,
  EventDelivered,
  EventDelivery,
  EventPage,
  PendingApproval,
  RequestPage,
  RunStatus,
  TranscriptPage,
  TranscriptPageInput,
  TurnReply,
} from '../runtime';

/** Messages every patchloop run understands. Safe to import from clients: definitions only. */

export const abortSignal = defineSignal<[AbortSignalInput?]>('abort');
export const userMessageSignal = defineSignal<[UserMessageInput]>('user_message');
/** The same message as an update: its validator refuses a bad one before anything is recorded. */
export const userMessageUpdate = defineUpdate<UserMessageAccepted, [UserMessageInput]>('user_message');
/** The whole transcript in one answer (a large one travels by reference: the reader needs the payload store). */
export const transcriptQuery = defineQuery<Message[]>('transcript');
/**
 * The transcript's JSON text in pages that always travel inline (under the payload store's threshold):
 * any client reads a transcript of any length with no data converter. `{"offset": 0}`, then each
 * answer's `next_offset` until `done`; join the `text`s and parse (see `TranscriptPage`).
 */
export const transcriptPageQuery = defineQuery<TranscriptPage, [TranscriptPageInput?]>('transcriptPage');
export const statusQuery = defineQuery<RunStatus, [StatusQueryInput?]>('status');
/**
 * One page of the request compiled for the LLM phase in flight; read by the LLM activity, never
 * recorded. Arguments: the digest the activity was scheduled with, the page, the LLM call number and
 * the offset the pages start from (a reader holding the previous request's prefix asks for the rest;
 * the digest of the whole text tells it whether its prefix was right). The workflow answers with its current request for that call even when its digest differs (a newer
 * build compiled it differently): the answer carries its own digest, which guards integrity.
 */
export const compiledRequestQuery = defineQuery<RequestPage, [string, number, number?, number?]>('compiledRequest');

/** Coarse events after an offset (`seq`), at most `limit` of them: deterministic under replay. */
export const eventsQuery = defineQuery<EventPage, [EventsQueryInput?]>('events');

/** The request the next LLM call would receive now, as JSON text: what exactly will the model see? */
export const nextRequestQuery = defineQuery<string>('nextRequest');

/**
 * A decision on a gated tool call: `{"tool_call_id", "approved", "reason"?}`. The validator refuses an
 * id that does not wait (unknown, or already decided) before anything is recorded.
 */
/** Raises the limits of a run's budget (`on_exhausted: "ask"` waits for it); answers the new limits. */
export const extendBudgetUpdate = defineUpdate<Record<string, number | null>, [BudgetExtension]>('extend_budget');
export const approveUpdate = defineUpdate<ApprovalAccepted, [ApprovalDecision]>('approve');
/**
 * Internal, between runs of a call tree: a sub-agent run tells its caller which calls of its subtree wait
 * for decisions (on every change), and a caller passes a decision down to the run it is for.
 */
export const childApprovalsSignal = defineSignal<[ChildApprovals]>('child_approvals');
export const decideApprovalSignal = defineSignal<[ApprovalDecision]>('decide_approval');
/** The gated tool calls waiting for a decision (also in `status`), its sub-agents' included. */
export const pendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals');

/**
 * An event another service delivers (`{"name", "payload", "key"?}`): the run's `wait_for_event` for that
 * name takes it, or the run holds it for the next one. The same `key` twice applies once.
 */
export const deliverEventUpdate = defineUpdate<EventDelivered, [EventDelivery]>('deliver_event');

/** Sessions: a user message whose update returns the assistant's reply when that turn ends. */
export const sendUpdate = defineUpdate<TurnReply, [UserMessageInput]>('send');
/** Sessions: end after the queued turns. */
export const closeSignal = defineSignal('close');

export interface AbortSignalInput {
  reason?: string;
}
export interface UserMessageInput {
  content: string;
}
export interface UserMessageAccepted {
  accepted: true;
  /** Messages waiting for the next compile boundary (a run) or for their turn (a session), this one included. */
  queued: number;
  message_id: number;
}
export interface EventsQueryInput {
  after?: number;
  limit?: number;
  /** The newest this many events (of those after `after`): where a reader that shows the latest starts. */
  last?: number;
}

export interface StatusQueryInput {
  /** Only events with a larger `seq`. */
  after?: number;
  /** At most this many events (default 500; the page also stays under about 1 MB). */
  limit?: number;
  /** The newest this many events (of those after `after`), as one page, instead of the oldest. */
  last?: number;
}
