import { randomUUID } from 'node:crypto';
import { abortAndWait } from '../run-abort';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { RunHandle, RunSummary } from '../../client/patchloop-client';
import { followRunEvents } from '../../client/follow';
import type { Message } from '../../context';
import { conversationAfter } from '../conversation';
import { authenticate, GATEWAY_MAX_BODY_BYTES, principalOf, refusedForRate, type GatewayContext } from '../gateway';
import { openaiError, refuseOpenai } from './openai-errors';
import { InputRefused, runInputOf } from './request-input';
import { ResponseTimeline, type ResponseHead } from './response-timeline';
import { runOutcome } from './run-outcome';
import { ResponsesRequest, UNSUPPORTED_FIELDS, type ResponsesObject } from './wire';

function headOf(summary: RunSummary, request: Partial<ResponseHead> = {}): ResponseHead {
  return {
    id: summary.workflow_id,
    created_at: Math.floor(Date.parse(summary.started) / 1000),
    model: summary.agent ?? request.model ?? '',
    background: request.background ?? false,
    previous_response_id: request.previous_response_id ?? null,
    metadata: request.metadata ?? {},
  };
}

/** The response as the run stands now: its items so far, its status, usage and error. */
async function currentResponse(handle: RunHandle, head: ResponseHead): Promise<ResponsesObject> {
  const outcome = await runOutcome(handle);
  const timeline = new ResponseTimeline(head);
  for (const event of (await handle.allEvents()).events) timeline.event(event);
  return timeline.finish(outcome);
}

/**
 * Streams the response's events (Server-Sent Events) from the run's events and live tokens until the
 * run ends or the reader goes, sending those numbered after `startingAfter` only.
 */
async function streamResponse(response: Response, handle: RunHandle, head: ResponseHead, startingAfter: number) {
  response.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  response.flushHeaders();
  const gone = new AbortController();
  response.on('close', () => gone.abort());
  const write = (event: { type: string }) => response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  const timeline = new ResponseTimeline(head, write, startingAfter);
  timeline.begin();
  const output = { event: timeline.event.bind(timeline), chunk: timeline.chunk.bind(timeline) };
  const { ended } = await followRunEvents(handle, output, { children: false, signal: gone.signal });
  if (ended) timeline.finish(await runOutcome(handle));
  response.end();
}

/** The principal's run behind a response id: an agent run (a chat session is no response). */
async function findResponse(context: GatewayContext, response: Response, id: string) {
  const found = await context.runs.find(principalOf(response), id);
  return found?.summary.type === 'agentRun' ? found : undefined;
}

function notFound(response: Response, id: string): void {
  openaiError(response, 404, `No response found with id '${id}'.`, { code: 'not_found' });
}

async function create(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const body: unknown = request.body;
  const unsupported = UNSUPPORTED_FIELDS.find(
    (field) => (body as Record<string, unknown> | undefined)?.[field] != null,
  );
  if (unsupported)
    return openaiError(response, 400, `'${unsupported}' is not supported: the agent's definition decides it`, {
      param: unsupported,
      code: 'unsupported_parameter',
    });
  const parsed = ResponsesRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.join('.') || null;
    return openaiError(response, 400, `${param ?? 'the body'}: ${issue.message}`, { param });
  }
  const wanted = parsed.data;
  if (wanted.store === false)
    return openaiError(response, 400, "'store: false' is not supported: every run is kept (it is durable)", {
      param: 'store',
      code: 'unsupported_parameter',
    });
  if (!context.agents.has(wanted.model))
    return openaiError(
      response,
      404,
      `The model '${wanted.model}' does not exist: this gateway serves the agents ${[...context.agents.keys()].join(', ')}`,
      { param: 'model', code: 'model_not_found' },
    );
  const principal = principalOf(response);
  let previous: Message[] = [];
  if (wanted.previous_response_id) {
    const found = await findResponse(context, response, wanted.previous_response_id);
    if (!found)
      return openaiError(response, 404, `No response found with id '${wanted.previous_response_id}'.`, {
        param: 'previous_response_id',
        code: 'not_found',
      });
    if (!found.summary.closed)
      return openaiError(response, 400, `Response '${wanted.previous_response_id}' is still in progress.`, {
        param: 'previous_response_id',
      });
    previous = await conversationAfter(found.handle);
  }
  let input;
  try {
    input = runInputOf(wanted, previous);
  } catch (error) {
    if (error instanceof InputRefused) return openaiError(response, 400, error.message, { param: error.param });
    throw error;
  }
  let handle: RunHandle;
  try {
    handle = await context.runs.start(principal, input, { workflowId: `resp_${randomUUID().replaceAll('-', '')}` });
  } catch (error) {
    if (refusedForRate(error, response, refuseOpenai)) return;
    throw error;
  }
  context.log(`responses: ${principal.name} started ${handle.workflowId} (agent ${wanted.model})`);
  const started = await context.runs.find(principal, handle.workflowId);
  const head = headOf(started!.summary, {
    model: wanted.model,
    background: wanted.background ?? false,
    previous_response_id: wanted.previous_response_id ?? null,
    metadata: wanted.metadata ?? {},
  });
  if (wanted.stream) return streamResponse(response, handle, head, -1);
  if (wanted.background) {
    // At once: nothing asks the run (no worker may have taken it yet).
    response.json(new ResponseTimeline(head).finish({ status: 'queued', usage: null, error: null, answer: null }));
    return;
  }
  await handle.workflow.result().catch(() => undefined);
  response.json(await currentResponse(handle, head));
}

async function retrieve(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const id = String(request.params['id']);
  const found = await findResponse(context, response, id);
  if (!found) return notFound(response, id);
  const head = headOf(found.summary);
  if (request.query['stream'] !== 'true') {
    response.json(await currentResponse(found.handle, head));
    return;
  }
  const after = request.query['starting_after'];
  const startingAfter = after === undefined ? -1 : Number(after);
  if (!Number.isSafeInteger(startingAfter) || startingAfter < -1)
    return openaiError(response, 400, `starting_after must be a sequence number (not ${String(after)})`, {
      param: 'starting_after',
    });
  return streamResponse(response, found.handle, head, startingAfter);
}

async function cancel(context: GatewayContext, request: Request, response: Response): Promise<void> {
  const id = String(request.params['id']);
  const found = await findResponse(context, response, id);
  if (!found) return notFound(response, id);
  if (!found.summary.closed) {
    await abortAndWait(found.handle, 'cancelled through the Responses API');
  }
  response.json(await currentResponse(found.handle, headOf(found.summary)));
}

/** Bodies that are not JSON, too large, and anything that went wrong: OpenAI's error shape. */
function answerErrors(error: unknown, _request: Request, response: Response, next: NextFunction): void {
  if (response.headersSent) return next(error);
  const failure = error as { type?: string; status?: number; message?: string };
  if (failure.type === 'entity.parse.failed')
    return openaiError(response, 400, `The body is not valid JSON: ${failure.message}`, { code: 'invalid_json' });
  if (failure.type === 'entity.too.large')
    return openaiError(response, 413, `The body is larger than ${GATEWAY_MAX_BODY_BYTES} bytes.`, {
      code: 'request_too_large',
    });
  openaiError(response, 500, `The gateway failed: ${failure.message ?? String(error)}`);
}

/**
 * The Responses API (docs/gateway.md): `POST /v1/responses` starts a run of the agent `model` names,
 * `GET /v1/responses/{id}` reads it (or streams it, `?stream=true&starting_after=N`),
 * `POST /v1/responses/{id}/cancel` aborts it. A response's id is its run's workflow id.
 */
export function mountResponses(app: Express, context: GatewayContext): void {
  const router = express.Router();
  router.use(authenticate(context.keys, refuseOpenai));
  router.use(express.json({ limit: GATEWAY_MAX_BODY_BYTES }));
  router.post('/', (request, response) => create(context, request, response));
  router.get('/:id', (request, response) => retrieve(context, request, response));
  router.post('/:id/cancel', (request, response) => cancel(context, request, response));
  router.use(answerErrors);
  app.use('/v1/responses', router);
}
