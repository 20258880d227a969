import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { BodyWriter, faultingEventSender, pause, sendJson, startStream, writeEvent } from './http';
import { plainResponse, streamResponse, textDelta, writeResponsesEvent } from './responses';
import type { FakeReply, FakeStep } from './steps';

export interface RecordedRequest {
  body: ChatRequestBody;
  headers: IncomingMessage['headers'];
  receivedAt: number;
  /** Set when the client closed the connection before the answer was complete (an aborted stream). */
  abandonedAt?: number;
  /** When the answer was fully written: `completedAt - receivedAt` is the model's own time. */
  completedAt?: number;
  /** When the first and the last streamed content chunk were written. */
  firstChunkAt?: number;
  lastChunkAt?: number;
  /** Streamed events written so far (content and tool-call chunks). */
  chunksWritten: number;
  /** The request's size as this server counts it (`promptTokens`), what its usage reports. */
  promptTokens: number;
  /** Set when the request did not fit the window (`windowTokens`) and was answered with a 400. */
  overWindow?: true;
  /** `responses` for a request to `POST /v1/responses` (its body has `input`, not `messages`). */
  api?: 'responses';
}

export interface ChatRequestBody {
  model: string;
  messages: Array<Record<string, unknown>>;
  stream?: boolean;
  tools?: Array<Record<string, unknown>>;
  [key: string]: unknown;
}

export type Responder = (body: ChatRequestBody, index: number) => FakeStep;

export interface FakeModelOptions {
  /** Scripted steps, one per request, in order. */
  script?: FakeStep[];
  /** Answers requests once the script is used up (the offline demo model). Without it, extra calls fail. */
  responder?: Responder;
  port?: number;
  host?: string;
  /** Keep every request body (default). Benchmarks turn it off: long sessions would hold O(turns^2) bytes. */
  keepBodies?: boolean;
  /**
   * The model's context window in tokens, enforced as OpenAI does: a request whose prompt (plus its
   * `max_tokens`) does not fit gets HTTP 400 `context_length_exceeded` with the counts in its message,
   * and uses no script step. Without it, any size is accepted.
   */
  windowTokens?: number;
}

/** Tokens of a request as the fake model counts them (and reports in usage): its body's characters / 4. */
export function promptTokens(bodyChars: number): number {
  return Math.ceil(bodyChars / 4);
}

/**
 * A real OpenAI-compatible HTTP server (`POST /v1/chat/completions`, and `POST /v1/responses` from the
 * same steps (see `responses.ts`); SSE streaming and plain JSON, tool calls) answering from a script: delays, 429/500 responses, dropped connections, malformed tool
 * arguments. It records every request body. An extra call answers 400 and is reported by `assertDone`,
 * as is a script step that was never used.
 */
export class FakeModelServer {
  readonly requests: RecordedRequest[] = [];
  /** The body of the latest request, kept even when `keepBodies` is off. */
  lastBody: ChatRequestBody | undefined;
  readonly problems: string[] = [];
  private readonly script: FakeStep[];
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  private readonly sockets = new Set<Socket>();

  private readonly server: Server;
  private readonly responder: Responder | undefined;
  private readonly keepBodies: boolean;
  private readonly windowTokens: number | undefined;

  private constructor(options: FakeModelOptions) {
    this.script = [...(options.script ?? [])];
    this.windowTokens = options.windowTokens;
    this.responder = options.responder;
    this.keepBodies = options.keepBodies ?? true;
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        this.problems.push(`fake model crashed: ${String(error)}`);
        if (!response.headersSent) sendJson(response, 500, { error: { message: String(error), type: 'fake_crash' } });
        else response.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(options: FakeModelOptions = {}): Promise<FakeModelServer> {
    const instance = new FakeModelServer(options);
    await new Promise<void>((resolve) =>
      instance.server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
    );
    return instance;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The base URL to give the openai client. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  enqueue(...steps: FakeStep[]): void {
    this.script.push(...steps);
  }

  get remainingSteps(): number {
    return this.script.length;
  }

  /** Resolves once `count` requests have arrived in total. */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  assertDone(): void {
    const problems = [...this.problems];
    if (this.script.length > 0) problems.push(`${this.script.length} scripted step(s) were never requested`);
    if (problems.length > 0) throw new Error(`fake model: ${problems.join('; ')}`);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const responses = request.url?.endsWith('/responses') ?? false;
    if (request.method !== 'POST' || (!responses && !request.url?.endsWith('/chat/completions'))) {
      sendJson(response, 404, { error: { message: `no route ${request.method} ${request.url}`, type: 'not_found' } });
      return;
    }
    let body: ChatRequestBody;
    let chars: number;
    try {
      const raw = await readBody(request);
      body = JSON.parse(raw) as ChatRequestBody;
      chars = raw.length;
      bodyChars.set(body, chars);
    } catch {
      sendJson(response, 400, { error: { message: 'request body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const index = this.requests.length;
    this.lastBody = body;
    this.requests.push({
      body: this.keepBodies ? body : { model: body.model, messages: [] },
      headers: request.headers,
      receivedAt: Date.now(),
      chunksWritten: 0,
      promptTokens: promptTokens(chars),
      ...(responses ? { api: 'responses' as const } : {}),
    });
    for (const waiter of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const record = this.requests[index]!;
    const limit = this.windowTokens;
    const reserved = body['max_tokens'] ?? body['max_output_tokens'];
    const completionTokens = typeof reserved === 'number' ? reserved : 0;
    if (limit !== undefined && record.promptTokens + completionTokens > limit) {
      record.overWindow = true;
      sendJson(response, 400, contextLengthError(limit, record.promptTokens, completionTokens));
      return;
    }
    const step = this.script.shift() ?? this.responder?.(body, index);
    if (!step) {
      this.problems.push(`unexpected request #${index + 1} (script exhausted)`);
      sendJson(response, 400, {
        error: {
          message: 'fake model: no scripted response left',
          type: 'invalid_request_error',
          code: 'script_exhausted',
        },
      });
      return;
    }
    response.on('close', () => {
      if (!response.writableEnded) record.abandonedAt = Date.now();
    });
    response.on('finish', () => (record.completedAt = Date.now()));
    await this.answer(step, body, response, record, index + 1);
  }

  private async answer(
    step: FakeStep,
    body: ChatRequestBody,
    response: ServerResponse,
    record: RecordedRequest,
    /** The request's number at this server, from 1. */
    number: number,
  ): Promise<void> {
    // The request stream is destroyed once its body is read; the response tells whether the client left.
    let clientGone = false;
    response.on('close', () => (clientGone = true));
    const closed = () => clientGone || response.destroyed || response.writableEnded;
    switch (step.kind) {
      case 'error': {
        await pause(step.delayMs ?? 0);
        if (closed()) return;
        if (step.body !== undefined) {
          const text = typeof step.body === 'string' ? step.body : step.body(number);
          response.writeHead(step.status, { 'content-type': step.contentType ?? 'application/json', ...step.headers });
          response.end(text);
          return;
        }
        const message = step.message ?? `fake model error ${step.status}`;
        const key = String(record.headers['authorization'] ?? '').replace(/^Bearer\s+/i, '');
        const text = step.echoKey ? `${message}: ${key}` : message;
        sendJson(
          response,
          step.status,
          { error: { message: text, type: step.type ?? 'fake_error', code: step.code ?? null } },
          step.headers,
        );
        return;
      }
      case 'drop': {
        startStream(response);
        for (const text of step.chunks) {
          await pause(step.chunkDelayMs ?? 0);
          if (closed()) return;
          this.writeText(response, body, record, text);
        }
        response.socket?.destroy();
        return;
      }
      case 'hang': {
        startStream(response);
        for (const text of step.chunks ?? []) {
          await pause(step.chunkDelayMs ?? 0);
          if (closed()) return;
          this.writeText(response, body, record, text);
        }
        await new Promise<void>((resolve) => response.on('close', resolve));
        return;
      }
      case 'reply':
        if (record.api === 'responses') {
          if (body.stream)
            await streamResponse(
              step,
              { model: body.model, promptTokens: record.promptTokens },
              response,
              closed,
              record,
            );
          else {
            await pause(step.firstChunkDelayMs ?? 0);
            if (!closed()) plainResponse(step, body.model, record.promptTokens, response);
          }
        } else if (body.stream) await this.stream(step, body, response, closed, record);
        else {
          await pause(step.firstChunkDelayMs ?? 0);
          if (!closed()) plainReply(response, body, step);
        }
        return;
      default: {
        const unreachable: never = step;
        throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** One streamed text chunk of a `drop` or `hang` step, in the request's wire format. */
  private writeText(response: ServerResponse, body: ChatRequestBody, record: RecordedRequest, text: string): void {
    if (record.api === 'responses') writeResponsesEvent(response, textDelta(text, record.chunksWritten));
    else writeEvent(response, chunk(body, { content: text }));
    record.chunksWritten += 1;
  }

  private async stream(
    step: FakeReply,
    body: ChatRequestBody,
    response: ServerResponse,
    closed: () => boolean,
    record: RecordedRequest,
  ): Promise<void> {
    startStream(response);
    // False once the client left or the connection was reset on purpose: stop writing.
    const fault = step.fault;
    const writer = faultingEventSender(response, fault, closed, '{"choices": [ this is not JSON', () => {
      record.chunksWritten += 1;
    });
    const send = (data: unknown): boolean => writer.send(`data: ${JSON.stringify(data)}\n\n`);
    for (const event of streamedEvents(step, body)) {
      await pause(event.delayMs);
      if (!send(event.data)) return;
      if (event.content) {
        record.firstChunkAt ??= performance.timeOrigin + performance.now();
        record.lastChunkAt = performance.timeOrigin + performance.now();
      }
    }
    const omit = fault?.kind === 'eof' ? fault.omit : undefined;
    if (omit !== 'done' && omit !== 'both' && !writer.raw('data: [DONE]\n\n')) return;
    if (!closed()) response.end();
  }
}

/**
 * The chunks of a streamed reply, in order, each with the pause before it: content, tool calls (their
 * arguments in two fragments, as real providers split them), the finish reason (unless a fault leaves
 * it out) and the usage-only tail when the request asked for usage.
 */
function streamedEvents(
  step: FakeReply,
  body: ChatRequestBody,
): Array<{ data: unknown; delayMs: number; content?: true }> {
  const contents = typeof step.content === 'string' ? [step.content] : (step.content ?? []);
  const first = step.firstChunkDelayMs ?? step.chunkDelayMs ?? 0;
  let paused = false;
  const delay = () => {
    const ms = paused ? (step.chunkDelayMs ?? 0) : first;
    paused = true;
    return ms;
  };
  const events: Array<{ data: unknown; delayMs: number; content?: true }> = [];
  for (const text of contents)
    events.push({ data: chunk(body, { role: 'assistant', content: text }), delayMs: delay(), content: true });
  for (const [index, call] of (step.toolCalls ?? []).entries()) {
    const half = Math.ceil(call.arguments.length / 2);
    const opening = {
      index,
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments.slice(0, half) },
    };
    events.push({ data: chunk(body, { tool_calls: [opening] }), delayMs: delay() });
    events.push({
      data: chunk(body, { tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] }),
      delayMs: 0,
    });
  }
  const omit = step.fault?.kind === 'eof' ? step.fault.omit : undefined;
  if (omit !== 'finish_reason' && omit !== 'both') {
    const finish = step.toolCalls?.length ? 'tool_calls' : 'stop';
    events.push({
      data: { ...chunk(body, {}), choices: [{ index: 0, delta: {}, finish_reason: finish }] },
      delayMs: 0,
    });
  }
  const usage = step.usage === undefined ? defaultUsage(body, replyText(step)) : step.usage;
  if (usage && (body['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage) {
    events.push({ data: { ...chunk(body, {}), choices: [], usage }, delayMs: 0 });
  }
  return events;
}

function plainReply(response: ServerResponse, body: ChatRequestBody, step: FakeReply): void {
  const fault = step.fault;
  const data = completion(body, step) as Record<string, unknown> & { choices: Array<Record<string, unknown>> };
  if (fault?.kind === 'eof' && fault.omit !== 'done') for (const choice of data.choices) delete choice['finish_reason'];
  if (fault?.kind === 'no_choices') delete (data as Record<string, unknown>)['choices'];
  const text = JSON.stringify(data);
  if (fault?.kind !== 'reset') {
    sendJson(response, 200, data);
    return;
  }
  // A body cut short: the declared length promises more than arrives before the reset.
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  new BodyWriter(response, fault.afterBytes ?? Math.floor(text.length / 2)).write(text);
}

/** Each request's body length: usage is estimated from it, not by serializing a long request again. */
const bodyChars = new WeakMap<ChatRequestBody, number>();

/** OpenAI's answer to a request longer than the model's context, word for word in its shape. */
function contextLengthError(window: number, prompt: number, completion: number) {
  const counts =
    completion > 0
      ? `you requested ${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion)`
      : `your messages resulted in ${prompt} tokens`;
  return {
    error: {
      message: `This model's maximum context length is ${window} tokens. However, ${counts}. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
}

/** What a reply generates (its completion tokens count it): text, and the tool calls' names and arguments. */
function replyText(step: FakeReply): string {
  const content = typeof step.content === 'string' ? step.content : (step.content ?? []).join('');
  return content + (step.toolCalls ?? []).map((call) => call.name + call.arguments).join('');
}

function defaultUsage(body: ChatRequestBody, content: string) {
  const prompt = promptTokens(bodyChars.get(body) ?? JSON.stringify(body).length);
  const completion = Math.ceil(content.length / 4) + 1;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function completion(body: ChatRequestBody, step: FakeReply) {
  const content = typeof step.content === 'string' ? step.content : (step.content ?? []).join('');
  const toolCalls = (step.toolCalls ?? []).map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: content === '' && toolCalls.length > 0 ? null : content,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: step.usage === undefined ? defaultUsage(body, replyText(step)) : step.usage,
  };
}

function chunk(body: ChatRequestBody, delta: Record<string, unknown>) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, delta, finish_reason: null }],
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const part of request) chunks.push(part as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
