import { createParser } from 'eventsource-parser';

/**
 * Watches a response body on its way to the openai client, which ends a stream silently both when
 * `[DONE]` arrives and when the body simply stops: did `[DONE]` arrive, and did the body end cleanly?
 */
export class BodyObserver {
  sawDone = false;
  ended = false;
  /** Server-sent events that arrived: none at all in a body that ended cleanly is an empty reply. */
  events = 0;
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
    const ended = () => (this.ended = true);
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          controller.enqueue(chunk);
        },
        flush() {
          parser.feed(decoder.decode());
          ended();
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
