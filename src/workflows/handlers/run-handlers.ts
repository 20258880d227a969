import { setHandler, workflowInfo } from '@temporalio/workflow';
import {
  BudgetExtension,
  routeDecision,
  digestText,
  effectiveLimits,
  extendLedger,
  REQUEST_PAGE_CHARS,
  transcriptPageBytes,
  transcriptPageEnd,
  type TranscriptPage,
  type PendingApproval,
  type RunEvent,
  type RunStatus,
} from '../../runtime';
import {
  abortSignal,
  approveUpdate,
  compiledRequestQuery,
  extendBudgetUpdate,
  eventsQuery,
  pendingApprovalsQuery,
  statusQuery,
  transcriptPageQuery,
  transcriptQuery,
  userMessageSignal,
  userMessageUpdate,
} from '../../common';
import { pendingOf, undecided } from '../batch/approval-gate';
import { applyDecision, registerTreeHandlers } from './tree-decisions';
import { budgetFigures, hasBudget } from '../loop/budget-gate';
import { setOnceUpdateHandler } from './update-ledger';
import { registerEventDelivery } from './event-delivery';
import { refusal } from './update-refusal';
import {
  checkMessage,
  childPending,
  earliestWait,
  runningChildren,
  contextWindow,
  emit,
  enqueueMessage,
  eventLog,
  rejectInput,
  reportedState,
  requestAbort,
  withOrigin,
  type Run,
} from '../run/run-state';

/** Query answers stay far below the 4 MB gRPC limit whatever the events hold. */
const PAGE_CHARS = 1_000_000;

/**
 * Events after `after`, at most `limit` (1 to 5,000) and about 1 MB of JSON: the oldest of them, or
 * with `last` the newest `last` of them (a reader showing the latest events reads them in one page).
 */
function eventPage(
  run: Run,
  after = 0,
  limit = 1000,
  last?: number,
): { events: RunEvent[]; next_after: number; events_dropped: number; more: boolean } {
  const most = Math.max(1, Math.min(limit, 5000));
  const newest = typeof last === 'number' && Number.isInteger(last) && last >= 0;
  const count = newest ? Math.min(most, last) : most;
  const events: RunEvent[] = [];
  let chars = 0;
  let more = false;
  // From the end backwards for the newest, from the start for the oldest; the same bounds either way.
  const order = newest ? [...eventLog(run)].reverse() : eventLog(run);
  for (const logged of order) {
    if (logged.seq <= after) {
      if (newest) break;
      continue;
    }
    more = events.length >= count;
    if (more) break;
    const event = withOrigin(run, logged);
    chars += JSON.stringify(event).length;
    more = chars > PAGE_CHARS && events.length > 0;
    if (more) break;
    events.push(event);
  }
  if (newest) events.reverse();
  return { events, next_after: events.at(-1)?.seq ?? after, events_dropped: run.durable.events_dropped, more };
}

/** The waits in progress, the earliest wake and the events held (fields absent while the run has none). */
function waitStatus(run: Run): Pick<RunStatus, 'waiting' | 'wake_at' | 'held_events'> {
  const held = run.durable.held_events.length;
  const next = earliestWait(run);
  return {
    ...(run.live.waits.length > 0 ? { waiting: [...run.live.waits] } : {}),
    ...(next ? { wake_at: next.wake_at } : {}),
    ...(held > 0 ? { held_events: held } : {}),
  };
}

function budgetStatus(run: Run): RunStatus['budget'] {
  if (!hasBudget(run)) return null;
  return { ...budgetFigures(run), awaiting: run.live.awaitingBudget };
}

function contextStatus(run: Run): RunStatus['context'] {
  const window = contextWindow(run);
  return {
    tokens: run.durable.context.tokens,
    window_tokens: window,
    compact_at_tokens: window === null ? null : Math.floor(window * run.settings.contextSettings.compact_at),
    compactions: run.durable.context.compactions,
  };
}

/** The run's own calls waiting for decisions, then its sub-agents' (each with its run's workflow id and agent). */
function pendingApprovals(run: Run): PendingApproval[] {
  return [...undecided(run).map(pendingOf), ...childPending(run)];
}

/**
 * A page of the transcript's JSON text, under the run's readable limit (so it never goes by reference).
 * The text and its digest are computed once per transcript (commits replace the array), not per page.
 */
function transcriptPage(run: Run, input: unknown): TranscriptPage {
  const options = input !== null && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  if (run.derived.transcriptText?.of !== run.durable.transcript) {
    const text = JSON.stringify(run.durable.transcript);
    run.derived.transcriptText = { of: run.durable.transcript, text, digest: digestText(text) };
  }
  const { text, digest } = run.derived.transcriptText;
  const offset = options['offset'] ?? 0;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    throw new Error(`offset ${JSON.stringify(offset)} is not a whole number from 0`);
  // Past the end: the transcript shrank since the reader's last page (a compaction). An empty page with
  // the current digest tells it to read again from 0, as any change of digest does.
  if (offset > text.length)
    return {
      text: '',
      offset,
      next_offset: 0,
      total_chars: text.length,
      done: false,
      messages: run.durable.transcript.length,
      digest,
    };
  const end = transcriptPageEnd(text, offset, transcriptPageBytes(options['max_bytes'], run.settings.readableBytes));
  return {
    text: text.slice(offset, end),
    offset,
    next_offset: end,
    total_chars: text.length,
    done: end >= text.length,
    messages: run.durable.transcript.length,
    digest,
  };
}

/**
 * Signals, updates and queries every run and session answers. The order is kept: queries a person can
 * call without arguments come first (the UI lists them in this order), and a signal buffered before the
 * run started reaches its handler as that handler is registered.
 */
export function registerRunHandlers(run: Run, extraStatus: () => Record<string, unknown> = () => ({})): void {
  registerTreeHandlers(run);
  registerStatusQueries(run, extraStatus);
  registerInputHandlers(run);
  registerReadingQueries(run);
  registerEventDelivery(run);
}

/** What a person reads first: the status, the transcript and its pages. */
function registerStatusQueries(run: Run, extraStatus: () => Record<string, unknown>): void {
  setHandler(
    statusQuery,
    (options) => ({
      state: reportedState(run),
      pending_approvals: pendingApprovals(run),
      agent: run.settings.agent,
      iteration: run.durable.iteration,
      llm_calls: run.durable.llm_calls,
      tool_calls: run.durable.tool_calls,
      usage: run.durable.usage,
      context: contextStatus(run),
      budget: budgetStatus(run),
      prices: run.settings.budget.prices,
      abort_requested: run.live.abort.requested,
      abort_reason: run.live.abort.reason,
      queued_user_messages: run.durable.inbox.length,
      ...waitStatus(run),
      rejected_inputs: run.durable.rejected_inputs,
      history: { events: workflowInfo().historyLength, bytes: workflowInfo().historySize },
      ...eventPage(run, options?.after, options?.limit ?? 500, options?.last),
      ...extraStatus(),
    }),
    { description: 'How the run stands: state, pending approvals, counters, history size and a page of events.' },
  );
  setHandler(transcriptQuery, () => run.durable.transcript, {
    description: 'The base transcript so far (OpenAI chat messages); a large one travels by reference.',
  });
  setHandler(transcriptPageQuery, (input) => transcriptPage(run, input), {
    description:
      'The transcript as pages of its JSON text, each small enough to travel inline: {"offset": 0}, then next_offset until done; join the texts.',
  });
}

/** What other parties send a run: an abort, user messages, decisions and budget extensions. */
function registerInputHandlers(run: Run): void {
  setHandler(abortSignal, (payload) => {
    if (payload !== undefined && (payload === null || typeof payload !== 'object'))
      rejectInput(run, 'abort', 'signal', 'expected {"reason": string}: aborting without a reason');
    requestAbort(run, payload !== null && typeof payload === 'object' ? payload.reason : undefined);
  });
  // A signal cannot be refused to its sender: a bad one is recorded as an event instead of vanishing.
  setHandler(userMessageSignal, (payload) => {
    if (run.live.state !== 'running') return rejectInput(run, 'user_message', 'signal', `the run is ${run.live.state}`);
    const check = checkMessage(run, payload);
    if (!check.ok) return rejectInput(run, 'user_message', 'signal', check.reason);
    enqueueMessage(run, check.content);
  });
  // The same message as an update: the caller learns at once whether it was accepted.
  setOnceUpdateHandler(
    run,
    userMessageUpdate,
    (payload) => {
      const entry = enqueueMessage(run, (payload as { content: string }).content);
      return { accepted: true as const, queued: run.durable.inbox.length, message_id: entry.id };
    },
    {
      validator: (payload) => {
        if (run.live.state !== 'running') throw refusal(`the run is ${run.live.state}`);
        if (run.live.abort.requested) throw refusal('the run is being aborted');
        const check = checkMessage(run, payload);
        if (!check.ok) throw refusal(check.reason);
      },
    },
  );
  setOnceUpdateHandler(run, approveUpdate, (payload) => applyDecision(run, payload, 'update'), {
    validator: (payload) => {
      if (run.live.state !== 'running') throw refusal(`the run is ${run.live.state}`);
      if (run.live.abort.requested) throw refusal('the run is being aborted');
      const routed = routeDecision(workflowInfo().workflowId, run.live.approvals, runningChildren(run), payload);
      if ('refusal' in routed) throw refusal(routed.refusal);
    },
  });
  setOnceUpdateHandler(
    run,
    extendBudgetUpdate,
    (payload) => {
      const extension = BudgetExtension.parse(payload);
      run.durable.ledger = extendLedger(run.durable.ledger, extension);
      run.live.budgetExtensions += 1;
      const limit = effectiveLimits(run.settings.budget, run.durable.ledger);
      emit(run, { event_type: 'budget_extended', extension, limit });
      return limit;
    },
    {
      validator: (payload) => {
        if (run.live.state !== 'running') throw refusal(`the run is ${run.live.state}`);
        const parsed = BudgetExtension.safeParse(payload);
        if (!parsed.success)
          throw refusal(`not a budget extension: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
      },
      description: 'Raise the budget: {"tokens": N, "llm_calls": N, "cost_usd": X, "wall_seconds": N} (any of them).',
    },
  );
}

/** What followers, approvers and the LLM activity read: pending calls, events by page, the compiled request. */
function registerReadingQueries(run: Run): void {
  setHandler(pendingApprovalsQuery, () => pendingApprovals(run), {
    description: 'Tool calls waiting for a decision (decide with the approve update).',
  });
  setHandler(
    eventsQuery,
    (options) => ({
      ...eventPage(run, options?.after, options?.limit ?? 1000, options?.last),
      state: reportedState(run),
    }),
    {
      description:
        'Events after {"after": seq}, at most {"limit": n}: what follow reads; {"last": n} gives the newest n of them.',
    },
  );
  setHandler(
    compiledRequestQuery,
    (digest, page, llmCall, from = 0) => compiledRequestPage(run, digest, page, llmCall, from),
    {
      description: 'Internal: the LLM activity reads the compiled request here by digest and page.',
    },
  );
}

/** A page of the compiled request in flight, from `from` (a reader that holds the text before it). */
function compiledRequestPage(run: Run, digest: string, page: number, llmCall: number | undefined, from: number) {
  const request = run.live.request;
  // The same call recompiled by a newer build answers too: its own digest guards the text.
  if (!request || (request.digest !== digest && (llmCall === undefined || request.llmCall !== llmCall))) {
    throw new Error(
      `no compiled request with digest ${digest}${llmCall !== undefined ? ` for LLM call ${llmCall}` : ''}`,
    );
  }
  // A reader asking from past the end holds some other prefix: it gets the whole text.
  const start = Number.isInteger(from) && from > 0 && from <= request.text.length ? from : 0;
  const pages = Math.max(1, Math.ceil((request.text.length - start) / REQUEST_PAGE_CHARS));
  if (!Number.isInteger(page) || page < 0 || page >= pages)
    throw new Error(`page ${page} out of range (0..${pages - 1})`);
  const offset = start + page * REQUEST_PAGE_CHARS;
  const text = request.text.slice(offset, offset + REQUEST_PAGE_CHARS);
  return {
    digest: request.digest,
    page,
    pages,
    text,
    from: start,
    stable: request.stable,
    messages_at: request.messagesAt,
  };
}
