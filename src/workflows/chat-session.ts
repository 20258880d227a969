import {
  allHandlersFinished,
  condition,
  ContinueAsNew,
  patched,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { cloneJson, ContextError, type Message } from '../context';
import {
  ChatSessionInput,
  SESSION_SCHEMA_VERSION,
  SESSION_SCHEMA_VERSIONS,
  type AgentSpec,
  fittedSessionResult,
  partOf,
  TurnContext,
  lastTurnFailure,
  type ChatSessionResult,
  type TurnReply,
  type RunEventBody,
  withInherited,
  type ForkSource,
} from '../runtime';
import { AgentLoop } from './loop/agent-loop';
import { checksAt } from './loop/guardrail-checks';
import {
  carriedInputFits,
  continueAsNewDue,
  continueAsNewOnCurrentBuild,
  newBuildCurrent,
} from './run/continue-as-new';
import { checkedResult } from './run/payload-budget';
import { carryRun, restoreRun } from './run/carried-run';
import { checkedSeed, openRun } from './run/open-run';
import { abortSignal, closeSignal, nextRequestQuery, sendUpdate } from '../common';
import { parseVersionedInput } from './run/input';
import { asRunFailure, turnFailure, withUnprocessedMessages } from './run/failures';
import { registerRunHandlers } from './handlers/run-handlers';
import { setOnceUpdateHandler } from './handlers/update-ledger';
import { refusal } from './handlers/update-refusal';
import { keepVisible } from './run/visibility';
import {
  checkMessage,
  commit,
  emit,
  enqueueMessage,
  eventLog,
  newRun,
  refreshDerived,
  requestAbort,
  type InboxEntry,
  type Run,
  unprocessedMessages,
  userMessageMutation,
} from './run/run-state';
import { sinks } from './sinks';
import { forkedEvent, forkStart, sessionForkCapture, sessionForkState } from './run/fork-state';

/** A session's own state beside its durable run. */
interface Session {
  run: Run;
  input: ChatSessionInput;
  turns: number;
  continued: number;
  turnActive: boolean;
  closing: boolean;
  /** Replies for `send` updates, by message id, until their handler returns them. */
  replies: Map<number, TurnReply>;
  /** Messages whose `send` waits for the reply. */
  waiting: Set<number>;
  loop?: AgentLoop;
  /** A continue-as-new the payload limit stopped was reported (once). */
  skipped: boolean;
  /** In a fork's capture replay only: called as each turn begins (`sessionForkCapture`). */
  capture?: (turn: number, turns: number, message: string) => void;
}

/**
 * A long-lived conversation: one workflow per session, one turn per user message, in arrival order.
 * `send` (update) answers with the turn's reply; `user_message` (signal or update) queues without
 * waiting; `abort` ends the current turn only. At a turn boundary, when Temporal suggests it or the
 * history passes the configured size, the session continues as new carrying its context state itself.
 */
export async function chatSession(rawInput: unknown): Promise<ChatSessionResult> {
  const parsed = parseSessionInput(rawInput);
  const run = newRun(parsed.agent, workflowInfo().workflowId);
  const { input, state, fork } = await sessionStart(run, rawInput, parsed);
  // Restore before any handler runs: updates and signals buffered for the new run are delivered as soon
  // as their handlers are registered, and must land in the carried inbox.
  if (state) restoreRun(run, state);
  const session: Session = {
    run,
    input,
    turns: state?.turns ?? 0,
    continued: state?.continued ?? 0,
    turnActive: false,
    closing: false,
    replies: new Map(),
    waiting: new Set(),
    skipped: false,
  };
  registerSessionHandlers(session);
  try {
    if (fork) emit(run, forkedEvent(fork, 'turn'));
    const agent = await openSession(session, state);
    for (let entry = await nextMessage(session); entry; entry = await nextMessage(session)) {
      await serveTurn(session, entry);
      // The list's counters follow each turn (sessions recorded before moved them every ten iterations).
      keepVisible(run, run.durable.iteration !== run.live.visibility.iteration && patched('session-visible-each-turn'));
      if (
        // Due, or (between turns) a new build is current: a session moves to it at its next idle boundary.
        (continueAsNewDue(input.continue_as_new) || (newBuildCurrent() && run.durable.inbox.length === 0)) &&
        (await readyToContinue(run, session.waiting)) &&
        // A close that came during the turn ends this run (sessions recorded before continued past it).
        !(session.closing && patched('session-close-is-not-carried-over'))
      ) {
        // The active agent (a handoff may have switched it) goes on in the next run.
        const active = session.loop!.agent;
        const next = () => carriedInput(run, input, { ...session, continued: session.continued + 1 }, active);
        if (carriedInputFits(run, active, next(), session)) {
          const info = workflowInfo();
          emit(run, {
            event_type: 'continued_as_new',
            history_events: info.historyLength,
            history_bytes: info.historySize,
            ...(newBuildCurrent() ? { to_current_build: true as const } : {}),
          });
          // Built after the event, so the next run's events count on from it.
          const carried = next();
          session.continued += 1;
          return await continueAsNewOnCurrentBuild<typeof chatSession>()(carried);
        }
      }
    }
    await condition(allHandlersFinished);
    run.live.state = 'completed';
    keepVisible(run);
    // Readable without patchloop's data converter, like a run's result (a long transcript is left out).
    const result: ChatSessionResult = checkedResult(
      agent,
      fittedSessionResult(
        { turns: session.turns, transcript: cloneJson(run.durable.transcript), usage: run.durable.usage },
        run.settings.readableBytes,
      ),
      "session's result",
    );
    sinks.patchloop.runEnded({
      status: 'completed',
      result,
      llmCalls: run.durable.llm_calls,
      toolCalls: run.durable.tool_calls,
    });
    return result;
  } catch (error) {
    if (error instanceof ContinueAsNew) throw error;
    run.live.state = 'failed';
    keepVisible(run);
    throw withUnprocessedMessages(asRunFailure(error), unprocessedMessages(run));
  }
}

/**
 * The input and state a session starts from: its own, or a fork's (read by an activity; `forkStart` says
 * what callers see meanwhile), which keeps the original's own overrides where its input has none (checked
 * as the input is: the original's values as it was given them).
 */
async function sessionStart(
  run: Run,
  rawInput: unknown,
  parsed: ChatSessionInput,
): Promise<{ input: ChatSessionInput; state: ChatSessionInput['state']; fork: ForkSource | undefined }> {
  const fork = parsed.state ? undefined : parsed.fork_from;
  if (!fork) return { input: parsed, state: parsed.state, fork };
  const forked = await forkStart(run, () => sessionForkState(fork));
  const input = parseSessionInput(withInherited(rawInput as Record<string, unknown>, forked.inherited));
  return { input, state: forked.state, fork };
}

/** The handlers every run has, plus the session's own: a turn-only abort, close, and `send`. */
function registerSessionHandlers(session: Session): void {
  const { run } = session;
  registerRunHandlers(run, () => ({
    turns: session.turns,
    continued_as_new: session.continued,
    turn_active: session.turnActive,
    started_agent: session.input.agent,
    last_turn_failure: lastTurnFailure(eventLog(run)),
  }));
  setHandler(abortSignal, (payload) => {
    if (session.turnActive) requestAbort(run, payload?.reason);
  });
  setHandler(closeSignal, () => void (session.closing = true));
  setHandler(nextRequestQuery, () => {
    if (!session.loop) throw new Error('the session is starting');
    return session.loop.previewRequest();
  });
  setOnceUpdateHandler(
    run,
    sendUpdate,
    async (message) => {
      const entry = enqueueMessage(run, message.content);
      session.waiting.add(entry.id);
      await condition(() => session.replies.has(entry.id));
      const reply = session.replies.get(entry.id)!;
      session.replies.delete(entry.id);
      session.waiting.delete(entry.id);
      return reply;
    },
    {
      // Rejected updates leave nothing in history.
      validator: (message) => {
        if (session.closing) throw refusal('the session is closing');
        const check = checkMessage(run, message);
        if (!check.ok) throw refusal(`send expects {"content": string}: ${check.reason}`);
      },
    },
  );
}

/** The agent (carried, or resolved for a new session), the seed context and the loop. */
async function openSession(session: Session, state: ChatSessionInput['state']): Promise<AgentSpec> {
  const { run, input } = session;
  const agent = await openRun(run, { ...input, state }, (resolved) => ({
    context: seedWithoutInput(checkedSeed(resolved, { history: input.history ?? [], input: '' }, 'chatSession')),
    prompt: '',
  }));
  session.loop = new AgentLoop(run, agent, {
    transport: 'query',
    maxToolCalls: input.max_tool_calls ?? agent.max_tool_calls,
    foldInbox: false,
  });
  const capture = sessionForkCapture(
    run,
    () => session.loop!.agent,
    () => session.continued,
  );
  if (capture) session.capture = capture;
  return agent;
}

/**
 * The next message to answer, in arrival order; undefined once the session closes with nothing left.
 * Closing lets running handlers finish first, and a message accepted meanwhile still gets its turn.
 */
async function nextMessage(session: Session): Promise<InboxEntry | undefined> {
  const { run } = session;
  // Between turns the session does nothing but wait: its last step is no longer what it does now.
  setCurrentDetails(`waiting for the next message (${session.turns} turns so far)`);
  for (;;) {
    await condition(() => run.durable.inbox.length > 0 || session.closing);
    const entry = run.durable.inbox.shift();
    if (entry) return entry;
    await condition(() => allHandlersFinished() || run.durable.inbox.length > 0);
    if (run.durable.inbox.length === 0) return undefined;
  }
}

/** One message's turn; its reply goes to the `send` that waits for it, if one does. */
async function serveTurn(session: Session, entry: InboxEntry): Promise<void> {
  const { run } = session;
  const checkpoint = turnCheckpoint(run, session.loop);
  // Where a fork of this turn starts: the turns before it done, its message not yet in the context.
  session.capture?.(session.turns + 1, session.turns, entry.content);
  emit(run, turnStartedEvent(session.turns + 1));
  run.live.abort = { requested: false, reason: '' };
  session.turnActive = true;
  // Awaited only with input guardrails: other sessions take the same steps as before them.
  const content = checksAt(session.loop!.agent, 'input')
    ? await admittedContent(session, entry.content)
    : entry.content;
  if (typeof content === 'string') run.durable.pending.push(userMessageMutation(content));
  const reply = typeof content === 'string' ? await runTurn(run, session.loop!, checkpoint, content) : content;
  session.turnActive = false;
  // An abort ends its turn only: the next messages are accepted as usual.
  run.live.abort = { requested: false, reason: '' };
  session.turns += 1;
  // Only a `send` waits for its reply; messages queued by signal or by `user_message` do not.
  if (session.waiting.has(entry.id)) session.replies.set(entry.id, { ...reply, turn: session.turns });
}

/**
 * The message as the agent's input guardrails let it go on; a blocked one fails its turn (`turn_failed`,
 * `GuardrailBlocked`) and never enters the transcript.
 */
async function admittedContent(session: Session, content: string): Promise<string | Omit<TurnReply, 'turn'>> {
  const { run } = session;
  const loop = session.loop!;
  try {
    return await loop.admitted(content, run.durable.iteration);
  } catch (error) {
    const failure = turnFailure(error);
    if (!failure) throw error;
    return failedTurn(run, failure);
  }
}

/** A failed turn's reply, logged (`turn_failed`). */
function failedTurn(run: Run, failure: { type: string; message: string }): Omit<TurnReply, 'turn'> {
  emit(run, { event_type: 'turn_failed', error_type: failure.type, message: failure.message });
  return { status: 'failed', reply: null, error: failure };
}

/** The context state a failed turn rolls back to, and the active agent (a handoff is rolled back with it). */
interface TurnCheckpoint {
  context: TurnContext;
  agent?: AgentSpec;
}

function turnCheckpoint(run: Run, loop?: AgentLoop): TurnCheckpoint {
  return { context: partOf(TurnContext, run.durable), ...(loop ? { agent: loop.agent } : {}) };
}

/**
 * One turn. A turn that fails (the provider rejects the message, the context is too long, the retry
 * budget runs out) answers `failed` with the error, and what its model calls and tools added to the
 * context is rolled back, so the transcript stays valid and the session goes on with the next message.
 * The user's message stays: the conversation keeps what was said, and the next turn's request holds it.
 */
async function runTurn(
  run: Run,
  loop: AgentLoop,
  checkpoint: TurnCheckpoint,
  content: string,
): Promise<Omit<TurnReply, 'turn'>> {
  try {
    const turn = await loop.turn();
    return {
      status: turn.status,
      reply: turn.answer,
      ...(turn.status === 'aborted' ? { abort_reason: run.live.abort.reason } : {}),
    };
  } catch (error) {
    const failure = turnFailure(error);
    // Sessions recorded before failed turns were answered failed with the whole session: replay them so.
    if (!failure || !patched('session-failed-turn-rolls-back')) throw error;
    // The failed turn's context goes (the next commit checks the restored transcript whole).
    Object.assign(run.durable, checkpoint.context);
    refreshDerived(run);
    if (checkpoint.agent) loop.useAgent(checkpoint.agent);
    run.live.request = null;
    // Sessions recorded before the message stayed replay without it.
    if (patched('session-failed-turn-keeps-message')) keepMessage(run, content);
    return failedTurn(run, failure);
  }
}

/**
 * The failed turn's message, committed after the rolled-back context as the turn began (with what was
 * pending before it). A commit that fails (the pending patches themselves broke the turn) keeps the
 * rollback as it is.
 */
function keepMessage(run: Run, content: string): void {
  const pending = run.durable.pending;
  try {
    commit(run, [...pending, userMessageMutation(content)]);
    run.durable.pending = [];
  } catch (error) {
    if (!(error instanceof ContextError)) throw error;
    run.durable.pending = pending;
  }
}

/** A turn's start: the console offers a fork of the session there. */
function turnStartedEvent(turn: number): RunEventBody {
  return { event_type: 'custom_event', event_name: 'turn_started', data: { turn }, tool_name: '', tool_call_id: '' };
}

/** The input of a session, carried state included (its schema version checked first). */
export function parseSessionInput(raw: unknown): ChatSessionInput {
  return parseVersionedInput(ChatSessionInput, raw, 'chatSession', SESSION_SCHEMA_VERSIONS);
}

/** The chat seed without the empty user message `seedTranscript` appends. */
function seedWithoutInput(seed: Message[]): Message[] {
  return seed.slice(0, -1);
}

/**
 * After a turn: continue as new once every accepted update has its reply and its
 * handler has finished. Messages queued by signal travel in the carried state; messages queued by
 * `send` are answered first, because an update cannot be carried over.
 */
async function readyToContinue(run: Run, waiting: Set<number>): Promise<boolean> {
  const hasUpdateMessages = run.durable.inbox.some((entry) => waiting.has(entry.id));
  if (hasUpdateMessages) return false;
  await condition(() => allHandlersFinished() || run.durable.inbox.some((entry) => waiting.has(entry.id)));
  return allHandlersFinished();
}

function carriedInput(
  run: Run,
  input: ChatSessionInput,
  session: { turns: number; continued: number },
  agent: AgentSpec,
): ChatSessionInput {
  return {
    agent: input.agent,
    ...(input.max_tool_calls !== undefined ? { max_tool_calls: input.max_tool_calls } : {}),
    // The session's own settings go on with it (absent from sessions recorded before they existed).
    ...(input.context ? { context: input.context } : {}),
    ...(input.budget ? { budget: input.budget } : {}),
    ...(input.principal ? { principal: input.principal } : {}),
    continue_as_new: input.continue_as_new,
    state: {
      schema_version: SESSION_SCHEMA_VERSION,
      // A session continues between turns: no tool call of a turn, no batch waiting. Its event window
      // travels since version 2; sessions recorded before replay with the size their input had then.
      ...carryRun(run, agent, { toolCalls: 0 }, session.continued, patched('session-carries-events')),
      turns: session.turns,
    },
  };
}
