import { createParser } from 'eventsource-parser';
import type { ErrorBody } from './provider-error-body';

/** The most of an error answer's body kept for reading its message. */
const MAX_ERROR_BODY_CHARS = 64 * 1024;

/**
 * Watches a response body on its way to the openai client, which ends a stream silently both when
 * `[DONE]` arrives and when the body simply stops: did `[DONE]` arrive, and did the body end cleanly?
 * It also keeps an error answer's body (its first 64 KB): the client keeps only the `error` field of
 * a JSON body, and nothing of FastAPI's `{"detail": ...}` and other shapes.
 */
export class BodyObserver {
  sawDone = false;
  ended = false;
  /** Server-sent events that arrived: none at all in a body that ended cleanly is an empty reply. */
  events = 0;
  /** The body of an answer with an error status, once the client has read it. */
  errorBody: ErrorBody | undefined;
  readonly fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init);
    if (!response.body) return response;
    const decoder = new TextDecoder();
    const parser = createParser({
      onEvent: (event) => {
        this.events += 1;
        if (event.data === '[DONE]') this.sawDone = true;
      },
    });
    const failed = !response.ok;
    const contentType = response.headers.get('content-type') ?? '';
    let errorText = '';
    const ended = () => {
      this.ended = true;
      if (failed) this.errorBody = { text: errorText, contentType };
    };
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const text = decoder.decode(chunk, { stream: true });
          parser.feed(text);
          if (failed && errorText.length < MAX_ERROR_BODY_CHARS)
            errorText = (errorText + text).slice(0, MAX_ERROR_BODY_CHARS);
          controller.enqueue(chunk);
        },
        flush() {
          const text = decoder.decode();
          parser.feed(text);
          if (failed) errorText = (errorText + text).slice(0, MAX_ERROR_BODY_CHARS);
          ended();
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
