import type { RunAgentInput } from '@ag-ui/core';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError } from '@temporalio/client';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { SessionHandle } from '../../client/patchloop-client';
import type { Message } from '../../context';
import type { ChatSessionInputWire, RunStatus } from '../../runtime';
import { conversationAfter } from '../conversation';
import {
  authenticate,
  GATEWAY_MAX_BODY_BYTES,
  ownError,
  principalOf,
  refusedForRate,
  refuseOwn,
  type GatewayContext,
} from '../gateway';
import { runEvents } from '../run-events';
import { answerInterrupts } from './interrupt-answers';
import { aguiMessagesOf, beforeTurnInProgress } from './transcript-messages';
import { newUserText, runAgentInputOf, threadHistory, threadSessionId, ThreadInputRefused } from './thread-input';
import { positionFromEventId, seqOfPosition, sseFrame, streamTurn, turnStartOf } from './turn-stream';
import { interruptEndPosition } from './turn-timeline';

/** How long a cancel waits for the turn it aborted to end. */
const CANCEL_WAIT_MS = 30_000;
/** How long a run whose message came in behind another's waits for that one's turn to end before it streams. */
const TURN_WAIT_MS = 10 * 60_000;

/** A refusal before the stream: it changes nothing, and the client reads why. */
class Refused extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

type SessionStatus = RunStatus & { turn_active?: boolean };

/** The caller's thread on this agent: its session, if one was started (it may have ended: closed). */
async function findThread(context: GatewayContext, response: Response, agent: string, threadId: string) {
  const found = await context.runs.find(
    principalOf(response),
    threadSessionId(principalOf(response).name, agent, threadId),
  );
  return found && { handle: found.handle, closed: found.summary.closed };
}

/** The caller's thread on this agent: its session, when one was started and has not ended. */
async function openThread(context: GatewayContext, response: Response, agent: string, threadId: string) {
  const found = await findThread(context, response, agent, threadId);
  return found && !found.closed ? found.handle : undefined;
}

/**
 * What a thread whose session ended (it was closed) goes on from: that session's conversation; the
 * input's messages when it cannot be read (the session failed before it had one).
 */
async function conversationOf(closed: SessionHandle | undefined, input: RunAgentInput): Promise<Message[]> {
  const given = threadHistory(input) as Message[];
  if (!closed) return given;
  return (await conversationAfter(closed).catch(() => undefined)) ?? given;
}

async function existingThread(context: GatewayContext, response: Response, agent: string, threadId: string) {
  const handle = await openThread(context, response, agent, threadId);
  if (!handle) throw new Refused(404, 'NotFound', `no thread ${threadId} on agent ${agent}`);
  return handle;
}

/** A `Last-Event-ID`: the reader lost its stream and comes back for the rest of the same run. */
async function reattach(
  context: GatewayContext,
  response: Response,
  agent: string,
  input: RunAgentInput,
  header: string,
) {
  const after = positionFromEventId(header);
  if (after === undefined)
    throw new Refused(400, 'InvalidRequest', `Last-Event-ID ${header} is not an id this endpoint sent`);
  const handle = await existingThread(context, response, agent, input.threadId);
  const { events } = await handle.allEvents();
  if (seqOfPosition(after) > (events.at(-1)?.seq ?? 0))
    throw new Refused(400, 'InvalidRequest', `Last-Event-ID ${header} is past the thread's last event`);
  const turnStart = turnStartOf(events, seqOfPosition(after));
  return { handle, turnStart, after };
}

/** A run with `resume` entries: the thread's interrupts answered, the turn goes on from there. */
async function resume(context: GatewayContext, response: Response, agent: string, input: RunAgentInput) {
  const handle = await existingThread(context, response, agent, input.threadId);
  const [{ events }, status] = await Promise.all([handle.allEvents(), handle.status(0, 1, 1)]);
  const answered = await answerInterrupts(handle, input.resume ?? [], events, status.pending_approvals);
  return { handle, turnStart: turnStartOf(events, answered), after: interruptEndPosition(answered) };
}

/** A run with a new user message: the thread's next turn (a new thread starts its session first). */
async function newTurn(context: GatewayContext, response: Response, agent: string, input: RunAgentInput) {
  const text = newUserText(input);
  const principal = principalOf(response);
  const found = await findThread(context, response, agent, input.threadId);
  let handle = found && !found.closed ? found.handle : undefined;
  let turnStart = 0;
  if (!handle) {
    const sessionId = threadSessionId(principal.name, agent, input.threadId);
    const history = (await conversationOf(found?.handle, input)) as ChatSessionInputWire['history'];
    try {
      handle = await context.runs.startSession(principal, { agent, history }, { sessionId });
      context.log(`ag-ui: ${principal.name} started thread ${input.threadId} as ${sessionId} (agent ${agent})`);
    } catch (error) {
      // Another run of the thread's first moment started it: this message is its next.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      handle = context.runs.client.session(sessionId);
    }
  } else {
    const status = (await handle.status(0, 1, 1)) as SessionStatus;
    if (status.pending_approvals.length > 0)
      throw new Refused(
        409,
        'Conflict',
        `the thread waits for decisions on ${status.pending_approvals.map((one) => one.tool_call_id).join(', ')}: answer them with "resume"`,
      );
    if (status.turn_active || status.queued_user_messages > 0)
      throw new Refused(
        409,
        'Conflict',
        'a run of this thread is in progress: re-attach with Last-Event-ID, or cancel it',
      );
    turnStart = status.next_after;
  }
  try {
    await handle.submit(text);
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError && error.cause)
      throw new Refused(400, 'InvalidRequest', error.cause.message);
    throw error;
  }
  // Another run's message may have come in between the look and this one: the turns go in order.
  turnStart = await ownTurnStart(handle, turnStart, text);
  return { handle, turnStart, after: -1 };
}

/**
 * Where the turn of the message `text` starts, the thread having been idle after `turnStart`: its
 * turn comes after those of the messages received before it, whose ends it waits for.
 */
async function ownTurnStart(handle: SessionHandle, turnStart: number, text: string): Promise<number> {
  const { events } = await handle.allEvents(turnStart);
  const received = events.filter((event) => event.event_type === 'user_message_received');
  const own = received.findLastIndex(
    (event) =>
      event.event_type === 'user_message_received' &&
      text.startsWith(event.content) &&
      (event.content_chars ?? event.content.length) === text.length,
  );
  let before = Math.max(0, own);
  if (before === 0) return turnStart;
  for await (const event of runEvents(handle, turnStart, AbortSignal.timeout(TURN_WAIT_MS)))
    if ((event.event_type === 'react_end' || event.event_type === 'turn_failed') && (before -= 1) === 0)
      return event.seq;
  throw new Refused(409, 'Conflict', 'the runs before this one on the thread did not end in time: re-attach later');
}

async function run(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const agent = String(request.params['agent']);
  if (!context.agents.has(agent))
    throw new Refused(
      404,
      'NotFound',
      `no agent ${agent}: this gateway serves ${[...context.agents.keys()].join(', ')}`,
    );
  const input = runAgentInputOf(request.body);
  const lastEventId = request.get('last-event-id');
  let start;
  try {
    start =
      lastEventId !== undefined
        ? await reattach(context, response, agent, input, lastEventId)
        : (input.resume ?? []).length > 0
          ? await resume(context, response, agent, input)
          : await newTurn(context, response, agent, input);
  } catch (error) {
    if (refusedForRate(error, response, refuseOwn)) return;
    throw error;
  }
  await streamTurn(response, start.handle, { threadId: input.threadId, runId: input.runId, ...start });
}

/**
 * `POST /ag-ui/AGENT/connect` (the protocol's connect, for a reader with nothing of its own: a page
 * that was reloaded): the thread's conversation as a messages snapshot, then the run in progress, if
 * one is, from its start (to its end, or to the interrupt it waits on). A thread with no session yet
 * answers an empty conversation.
 */
async function connect(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const agent = String(request.params['agent']);
  const input = runAgentInputOf(request.body);
  const found = await findThread(context, response, agent, input.threadId);
  const handle = found && !found.closed ? found.handle : undefined;
  const ids = { threadId: input.threadId, runId: input.runId, after: -1 };
  if (!handle) {
    const messages = found ? aguiMessagesOf(await conversationOf(found.handle, input)) : [];
    response.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    const events = [
      { type: 'RUN_STARTED', threadId: input.threadId, runId: input.runId },
      { type: 'MESSAGES_SNAPSHOT', messages },
      { type: 'RUN_FINISHED', threadId: input.threadId, runId: input.runId, outcome: { type: 'success' } },
    ];
    response.end(events.map((event) => sseFrame(event)).join(''));
    return;
  }
  const status = (await handle.status(0, 1, 1)) as SessionStatus;
  if (status.turn_active !== true) {
    const messages = aguiMessagesOf(await handle.transcript());
    return streamTurn(response, handle, { ...ids, turnStart: 0, messages, idle: true });
  }
  const { turnStart, messages } = await turnInProgress(handle);
  return streamTurn(response, handle, { ...ids, turnStart, messages });
}

/**
 * Where the turn in progress starts, and the conversation before it, read so that they agree: the
 * events before and after the transcript tell whether the turn's first model call (which commits its
 * user message) came in between; then they are read again, a few times at most.
 */
async function turnInProgress(handle: SessionHandle) {
  const stateOf = async () => {
    const { events } = await handle.allEvents();
    const turnStart = turnStartOf(events, Number.MAX_SAFE_INTEGER);
    const turn = events.filter((event) => event.seq > turnStart);
    const received = turn.find((event) => event.event_type === 'user_message_received');
    return {
      turnStart,
      committed: turn.some((event) => event.event_type === 'llm_call_start'),
      message: received?.event_type === 'user_message_received' ? received.content : undefined,
    };
  };
  for (let attempt = 1; ; attempt += 1) {
    const before = await stateOf();
    const transcript = await handle.transcript();
    const after = await stateOf();
    if ((before.committed === after.committed && before.turnStart === after.turnStart) || attempt === 3)
      return { turnStart: after.turnStart, messages: aguiMessagesOf(beforeTurnInProgress(transcript, after)) };
  }
}

/** The thread a cancel or a close names: `{"threadId"}`, the caller's, open. */
async function namedThread(context: GatewayContext, request: Request, response: Response) {
  const threadId = (request.body as { threadId?: unknown } | undefined)?.threadId;
  if (typeof threadId !== 'string' || threadId === '')
    throw new Refused(400, 'InvalidRequest', 'the body must be {"threadId": string}');
  return existingThread(context, response, String(request.params['agent']), threadId);
}

/**
 * `POST /ag-ui/AGENT/close` `{"threadId"}`: ends the thread's session after its run in progress, so it
 * no longer counts among the principal's runs going on. Nothing is lost: the thread's next message
 * starts a session that goes on from the conversation.
 */
async function close(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const handle = await namedThread(context, request, response);
  await handle.close();
  response.json({ closed: true });
}

/** `POST /ag-ui/AGENT/cancel` `{"threadId"}`: aborts the thread's run in progress and answers when it ended. */
async function cancel(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const handle = await namedThread(context, request, response);
  const active = async () => ((await handle.status(0, 1, 1)) as SessionStatus).turn_active === true;
  if (!(await active())) {
    response.json({ cancelled: false, message: 'no run of this thread is in progress' });
    return;
  }
  await handle.abort('cancelled through AG-UI');
  const deadline = Date.now() + CANCEL_WAIT_MS;
  let gone = false;
  response.on('close', () => (gone = true));
  while (!gone && Date.now() < deadline && (await active().catch(() => true)))
    await new Promise((resolve) => setTimeout(resolve, 200));
  response.json({ cancelled: true });
}

/** Refusals, bodies that are not JSON or too large, and failures before the stream: patchloop's own error shape. */
function answerErrors(error: unknown, _request: Request, response: Response, next: NextFunction): void {
  if (response.headersSent) return next(error);
  if (error instanceof Refused) return ownError(response, error.status, error.type, error.message);
  if (error instanceof ThreadInputRefused) return ownError(response, 400, 'InvalidRequest', error.message);
  const failure = error as { type?: string; message?: string };
  if (failure.type === 'entity.parse.failed')
    return ownError(response, 400, 'InvalidRequest', `the body is not valid JSON: ${failure.message}`);
  if (failure.type === 'entity.too.large')
    return ownError(response, 413, 'TooLarge', `the body is larger than ${GATEWAY_MAX_BODY_BYTES} bytes`);
  ownError(response, 500, 'InternalError', `the gateway failed: ${failure.message ?? String(error)}`);
}

/**
 * AG-UI (docs/ag-ui.md): `POST /ag-ui/AGENT` runs the agent on the request's thread and answers with the
 * run's events (SSE); `POST /ag-ui/AGENT/cancel` aborts a thread's run in progress.
 */
export function mountAgui(app: Express, context: GatewayContext): void {
  const router = express.Router();
  router.use(authenticate(context.keys, refuseOwn));
  router.use(express.json({ limit: GATEWAY_MAX_BODY_BYTES }));
  router.post('/:agent/cancel', (request, response, next) => {
    cancel(context, request, response).catch(next);
  });
  router.post('/:agent/close', (request, response, next) => {
    close(context, request, response).catch(next);
  });
  router.post('/:agent/connect', (request, response, next) => {
    connect(context, request, response).catch(next);
  });
  router.post('/:agent', (request, response, next) => {
    run(context, request, response).catch(next);
  });
  router.use(answerErrors);
  app.use('/ag-ui', router);
}
