import type OpenAI from 'openai';
import type { JsonObject } from '../context';
import type { BodyObserver } from './body-observer';
import { incompleteReply } from './provider-errors';
import type { Reply, SendOptions } from './reply';
import { responseReply, ResponsesStreamReader, type ResponseObject, type ResponsesEvent } from './responses-reading';
import type { StreamAccumulator } from './stream-accumulator';

type StreamingParams = OpenAI.Responses.ResponseCreateParamsStreaming;
type PlainParams = OpenAI.Responses.ResponseCreateParamsNonStreaming;

/**
 * One streamed call to `POST /responses`. Complete only when the body ended cleanly and the stream's
 * last event (`response.completed` or `response.incomplete`) arrived: the openai stream ends silently
 * both on a reset connection and on a server that just stops, and this API has no `[DONE]`.
 */
export async function streamResponses(
  client: OpenAI,
  body: JsonObject,
  options: SendOptions,
  stream: StreamAccumulator,
  observer: BodyObserver,
): Promise<Reply> {
  const signal = options.signal;
  const reader = new ResponsesStreamReader(stream);
  const events = (await client.responses.create(
    body as unknown as StreamingParams,
    options,
  )) as unknown as AsyncIterable<ResponsesEvent>;
  for await (const event of events) {
    reader.add(event);
    if (signal.aborted) break;
  }
  if (signal.aborted) throw signal.reason;
  if (!observer.ended) throw incompleteReply(`the stream broke off after ${stream.content.length} characters`);
  if (!reader.ended)
    throw incompleteReply(`the stream ended without response.completed after ${stream.content.length} characters`);
  return stream.reply();
}

/** One call to `POST /responses` answered as a whole (spec 8.2: an abort does not interrupt it). */
export async function plainResponses(client: OpenAI, body: JsonObject, options: SendOptions): Promise<Reply> {
  const response = await client.responses.create(body as unknown as PlainParams, options);
  return responseReply(response as unknown as ResponseObject);
}
