import type { SecretRedactor } from './redact';
import { Context } from '@temporalio/activity';
import { SpanKind, type Span } from '@opentelemetry/api';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { JsonObject, JsonValue, Mutation, ToolCall } from '../context';
import {
  adaptRequest,
  attemptFailureIn,
  CHARS_PER_TOKEN,
  estimatedUsage,
  PROTOCOL_VERSION,
  PROVIDER_PROFILES,
  providerKeyProblem,
  providerUsage,
  resolveProvider,
  truncatedReplyMutation,
  type LlmPhaseInput,
  type LlmPhaseResult,
  type LlmRequest,
  type ProviderApi,
  type ProviderProfile,
  type ProviderProfileName,
  type ResolvedProvider,
} from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import type { ChunkTransport, StreamEvent } from '../streaming/chunk';
import type { StreamTokens } from '../streaming/stream-token';
import { cancellationError, isUserAbort, startHeartbeat } from './activity-context';
import { inGenAiSpan } from './gen-ai-spans';
import { classifyAttempt, emptyReply, incompleteReply } from './provider-errors';
import { loadRequest, runKey, type LoadedRequest, type RequestCache } from './request-source';
import { BodyObserver } from './body-observer';
import { ReasoningMemory } from './reasoning-memory';
import type { Reply, SendOptions } from './reply';
import { plainResponses, streamResponses } from './responses-call';
import { responsesBody } from './responses-request';
import { StreamAccumulator, type ArgumentsDelta, type StreamChunk } from './stream-accumulator';
import { failure, FailureType } from '../common';
import { recordedReply, withFastTools, type FastToolSettings } from './fast-tools';

/** The worker's provider: the default of every agent that does not choose its own. */
export interface ProviderSettings {
  baseURL?: string;
  apiKey?: string;
  /** PATCHLOOP_PROVIDER_PROFILE: what kind of server it is (default `openai`). */
  profile?: ProviderProfileName;
  /** PATCHLOOP_PROVIDER_API: its wire format (default `chat_completions`). */
  api?: ProviderApi;
  /** One attempt's HTTP timeout; keep it below the activity's start-to-close timeout. */
  timeoutMs: number;
  /** Where agents' `api_key_env` variables are read (the worker's environment). */
  environment?: NodeJS.ProcessEnv;
}

/** Where token chunks go (the side channel), the URL followers read them from, and their capabilities. */
export interface ChunkSink {
  transport: ChunkTransport;
  url: string;
  tokens: StreamTokens;
}

/**
 * The LLM phase: one chat completion (or, for a provider whose `api` is `responses`, one Responses API
 * call, `responses-call.ts`), streamed when the request says so. Returns the phase's patches
 * (spec 7.4). A reply counts only when it is complete: a finish reason, `[DONE]` when streamed, no
 * transport error and no undecodable data. Anything else fails the attempt (retryable) and none of its
 * text reaches the transcript. On a user abort it returns `[AssistantTruncatedMutation]` with the text
 * received so far; on any other cancel (worker shutdown) it throws so the phase runs again.
 */
export function createLlmPhase(
  settings: ProviderSettings,
  cache: RequestCache,
  registry: AgentRegistry,
  extras: {
    chunks?: ChunkSink | undefined;
    redactor?: SecretRedactor | undefined;
    /** Runs the reply's fast tools (./fast-tools.ts). */
    fastTools?: FastToolSettings;
  } = {},
) {
  const { chunks, redactor, fastTools } = extras;
  const worker: PhaseWorker = {
    settings,
    cache,
    registry,
    chunks,
    redactor,
    clients: providerClients(settings),
    // The Responses API's reasoning items of this worker's tool-calling replies, sent back next turn.
    reasoning: new ReasoningMemory(),
  };
  return async function llmPhase(input: LlmPhaseInput): Promise<LlmPhaseResult> {
    // An attempt that died while the reply's fast tools ran left the reply in its heartbeat: no new call.
    const recorded = fastTools && recordedReply(Context.current().info.heartbeatDetails, input);
    if (recorded) return withFastTools(fastTools, input, recorded);
    const result = await inGenAiSpan(
      'chat',
      { 'gen_ai.operation.name': 'chat' },
      (span) => phase(worker, input, span),
      SpanKind.CLIENT,
    );
    return fastTools ? withFastTools(fastTools, input, { result, attempt: Context.current().info.attempt }) : result;
  };
}

/** What the LLM phase keeps across calls: the worker's provider and its clients, the request cache. */
interface PhaseWorker {
  settings: ProviderSettings;
  cache: RequestCache;
  registry: AgentRegistry;
  chunks: ChunkSink | undefined;
  /** Heartbeat details leave the worker without the redaction interceptor: a failure's text is redacted here. */
  redactor: SecretRedactor | undefined;
  clients: ReturnType<typeof providerClients>;
  reasoning: ReasoningMemory;
}

/** One attempt of a model call: its input, span and activity context, and what it has read so far. */
interface PhaseAttempt {
  worker: PhaseWorker;
  input: LlmPhaseInput;
  span: Span;
  context: Context;
  started: number;
  stream: StreamAccumulator;
  observer: BodyObserver;
  /** Whether the request went out streamed (unknown until it is written for the wire). */
  sentStreamed?: boolean;
}

/** A request the provider answered: the reply, the wire format it went in, and the request's size. */
interface AnsweredRequest {
  reply: Reply;
  api: ProviderApi;
  requestChars: number;
}

async function phase(worker: PhaseWorker, input: LlmPhaseInput, span: Span): Promise<LlmPhaseResult> {
  const context = Context.current();
  const publisher = chunkPublisher(worker.chunks, context, input);
  const stream = new StreamAccumulator(
    (text) => publisher.chunk(text),
    (delta) => publisher.argumentsDelta(delta),
  );
  const attempt: PhaseAttempt = {
    worker,
    input,
    span,
    context,
    started: Date.now(),
    stream,
    observer: new BodyObserver(),
  };
  // The heartbeat starts first: loading the request may take a while (a replaying workflow answers
  // the query), and both liveness and cancellation depend on it. It also tells followers where this
  // call's tokens stream from (nothing goes to history).
  // The last failed attempt rides along: when the retry budget runs out while an attempt is in
  // flight, the server's timeout carries only these details, and the run reports that error.
  let lastFailure = attemptFailureIn(context.info.heartbeatDetails);
  const details = () => ({
    iteration: input.iteration,
    chars: stream.content.length,
    ...publisher.announcement,
    ...(lastFailure ? { last_failure: lastFailure } : {}),
  });
  const stopHeartbeat = startHeartbeat(context, details);
  let answered: AnsweredRequest;
  try {
    answered = await sendRequest(attempt);
  } catch (error) {
    // An abort before the first byte throws (APIUserAbortError): that is the abort path, not a failure.
    if (context.cancellationSignal.aborted) return abortPath(context, publisher, abortedResult(attempt));
    const { failure, record } = classifyAttempt(error, lastFailure, {
      body: attempt.observer.errorBody,
      serverErrorSeconds: input.server_error_seconds,
    });
    publisher.end('failed', { error: failure.type ?? 'Error', retrying: !failure.nonRetryable });
    lastFailure = attempt.worker.redactor
      ? attempt.worker.redactor.redactValue(record, (text) => attempt.worker.redactor!.redact(text))
      : record;
    context.heartbeat(details());
    throw failure;
  } finally {
    stopHeartbeat();
  }
  if (!answered.reply.streamed) publisher.chunk(answered.reply.content);
  // Held text that is no answer (the reply calls tools) goes out now; an answer's waits for its checks.
  if (answered.reply.toolCalls.length > 0) publisher.release();
  publisher.end('completed');
  return completedPhase(attempt, answered);
}

/** The request loaded from the workflow, sent as the provider takes it, and its complete reply. */
async function sendRequest(attempt: PhaseAttempt): Promise<AnsweredRequest> {
  const { worker, input, context } = attempt;
  const signal = context.cancellationSignal;
  const workflowId = context.info.workflowExecution?.workflowId ?? '';
  const provider = worker.clients.resolve(input);
  const profile = PROVIDER_PROFILES[provider.profile];
  const client = worker.clients.client(provider);
  const loaded = await loadCompiledRequest(input, worker.cache);
  const { request, text } = loaded;
  const requestChars = text?.length ?? (loaded.chars || JSON.stringify(request).length);
  describeCall(attempt.span, provider, loaded, input);
  if (signal.aborted) throw signal.reason;
  // One attempt's HTTP timeout stays below the attempt's own start-to-close timeout.
  const timeout = Math.max(1000, Math.min(worker.settings.timeoutMs, context.info.startToCloseTimeoutMs - 5000));
  const attemptClient = client.withOptions({ fetch: attempt.observer.fetch, timeout });
  const wire = wireRequest(provider.api, request, text, profile, (full) => worker.reasoning.restore(workflowId, full));
  attempt.sentStreamed = wire.stream;
  // A summary or a judge's call that an abort stopped is of no use any more: it ends at once; so is a call the run
  // asked to stream (an abort interrupts it) that the profile sends plain.
  const plainSignal = input.purpose !== undefined || request.stream ? signal : shutdownOnly(context);
  const reply = await sendWire(attemptClient, wire, { signal, plainSignal }, attempt.stream, attempt.observer);
  if (reply.content === '' && reply.toolCalls.length === 0) throw emptyReply(reply.finishReason);
  return { reply, api: provider.api, requestChars };
}

/** The phase's result from a complete reply: usage (estimated when the server sent none), the span's attributes, a typed function's check. */
function completedPhase(attempt: PhaseAttempt, { reply, api, requestChars }: AnsweredRequest): LlmPhaseResult {
  const { worker, input, span, context } = attempt;
  // A server that sends no usage (or ignores stream_options) is counted from characters, marked so.
  const usage = reply.usage ?? estimatedUsage(requestChars, replyChars(reply), CHARS_PER_TOKEN);
  const result = completedResult({ ...reply, usage }, attempt.started);
  const execution = context.info.workflowExecution;
  // A summary call's reply is in no later request: not recorded as what follows the held request (the
  // compacted request after it differs from the held one anyway and is read whole, by digest).
  if (execution && !input.purpose) worker.cache.replied(runKey(execution), result.mutations);
  if (api === 'responses')
    worker.reasoning.remember(execution?.workflowId ?? '', reply.toolCalls, reply.reasoningDetails);
  if (result.usage) {
    span.setAttribute('gen_ai.usage.input_tokens', result.usage.prompt_tokens);
    span.setAttribute('gen_ai.usage.output_tokens', result.usage.completion_tokens);
  }
  if (result.finish_reason) span.setAttribute('gen_ai.response.finish_reasons', [result.finish_reason]);
  // A typed function's final reply is checked here, where its zod schema lives.
  if (input.output_check && reply.toolCalls.length === 0)
    return {
      ...result,
      output_check: worker.registry
        .llmFunction(input.output_check)
        .checkOutput(reply.content) as LlmPhaseResult['output_check'],
    };
  return result;
}

/** The call's span: the provider's profile, the model, and how much of the request crossed from the workflow. */
function describeCall(span: Span, provider: ResolvedProvider, loaded: LoadedRequest, input: LlmPhaseInput): void {
  span.setAttribute('patchloop.provider.profile', provider.profile);
  span.updateName(`chat ${loaded.request.model}`);
  span.setAttribute('gen_ai.request.model', loaded.request.model);
  if (input.purpose) span.setAttribute('patchloop.llm.purpose', input.purpose);
  // How much of the request text crossed from the workflow (a long run reads only its new part).
  span.setAttributes({
    'patchloop.request.chars': loaded.chars,
    'patchloop.request.chars_read': loaded.charsRead,
    ...(loaded.source ? { 'patchloop.request.source': loaded.source } : {}),
  });
}

/**
 * The provider each call goes to (the agent's choices over the worker's), and one openai client per
 * server and key. One retry layer: Temporal's; the client's own retries would multiply it. Its logger
 * is off: errors are classified and reported here, redacted, not printed with raw provider data.
 */
function providerClients(settings: ProviderSettings) {
  const environment = settings.environment ?? process.env;
  const clients = new Map<string, OpenAI>();
  const defaults = {
    ...(settings.baseURL ? { baseURL: settings.baseURL } : {}),
    ...(settings.profile ? { profile: settings.profile } : {}),
    ...(settings.api ? { api: settings.api } : {}),
  };
  return {
    resolve(input: LlmPhaseInput): ResolvedProvider {
      return resolveProvider(input.provider, defaults);
    },
    client(provider: ResolvedProvider): OpenAI {
      // The worker's own key unless the agent names a variable; read at each call, never stored.
      const problem = provider.apiKeyEnv ? providerKeyProblem(provider.apiKeyEnv, environment) : null;
      if (problem) throw failure(FailureType.ProviderAuthFailed, `the agent ${problem}`);
      const apiKey = provider.apiKeyEnv ? environment[provider.apiKeyEnv] : settings.apiKey;
      const key = `${provider.baseURL ?? ''}\n${apiKey ?? ''}`;
      let client = clients.get(key);
      if (!client) {
        client = new OpenAI({
          baseURL: provider.baseURL,
          apiKey: apiKey ?? 'unset',
          maxRetries: 0,
          timeout: settings.timeoutMs,
          logLevel: 'off',
        });
        clients.set(key, client);
      }
      return client;
    },
  };
}

/**
 * The request as it goes on the wire: the body the profile's server takes, in the provider's format,
 * and whether it streams (a profile may send plain a call the run asked to stream).
 */
type WireRequest =
  | { api: 'responses'; body: JsonObject; stream: boolean }
  | { api: 'chat_completions'; body: string; params: LlmRequest; stream: boolean };

function wireRequest(
  api: ProviderApi,
  request: LlmRequest,
  text: string | undefined,
  profile: ProviderProfile,
  restoreReasoning: (request: LlmRequest) => LlmRequest,
): WireRequest {
  if (api === 'responses') {
    const body = responsesBody(adaptRequest(restoreReasoning(fullRequest(request, text)), profile));
    return { api, body, stream: body['stream'] === true };
  }
  // The workflow's text is the body, byte for byte, unless the server needs another form of it.
  const wire = wireBody(request, text, profile);
  // The client reads the reply as the body asks for it.
  const params = wire.stream === request.stream ? request : { ...request, stream: wire.stream };
  return { api, body: wire.body, params, stream: wire.stream };
}

/** Sends the request and reads its reply, streamed or plain as it went out. */
function sendWire(
  client: OpenAI,
  wire: WireRequest,
  signals: { signal: AbortSignal; plainSignal: AbortSignal },
  stream: StreamAccumulator,
  observer: BodyObserver,
): Promise<Reply> {
  if (wire.api === 'responses')
    return wire.stream
      ? streamResponses(client, wire.body, { signal: signals.signal }, stream, observer)
      : plainResponses(client, wire.body, { signal: signals.plainSignal });
  const sent = { body: wire.body, headers: { 'content-type': 'application/json' } };
  return wire.stream
    ? streamReply(client, wire.params, { ...sent, signal: signals.signal }, stream, observer)
    : plainReply(client, wire.params, { ...sent, signal: signals.plainSignal });
}

/**
 * The body as the profile's server takes it, and whether it streams: the workflow's text when it needs
 * nothing else (no parse, no copy of a long transcript), otherwise the request adapted and written again.
 */
function wireBody(
  request: LlmRequest,
  text: string | undefined,
  profile: ProviderProfile,
): { body: string; stream: boolean } {
  const fields = adaptRequest(request, profile);
  // The fields beside the messages are parsed already; the messages change only where content is null.
  const messagesChange =
    profile.toolCallOnlyContent !== null && (text === undefined || text.includes('"content":null'));
  if (text !== undefined && fields === request && !messagesChange) return { body: text, stream: request.stream };
  const adapted = text === undefined ? fields : adaptRequest(JSON.parse(text) as LlmRequest, profile);
  return { body: JSON.stringify(adapted), stream: adapted.stream };
}

/** The whole compiled request: its messages are in the workflow's text when that was loaded. */
function fullRequest(request: LlmRequest, text: string | undefined): LlmRequest {
  return text === undefined ? request : (JSON.parse(text) as LlmRequest);
}

/** The reply's size in characters: its text and its calls' names and arguments. */
function replyChars(reply: Reply): number {
  return reply.toolCalls.reduce(
    (total, call) => total + call.function.name.length + call.function.arguments.length,
    reply.content.length,
  );
}

/** The workflow's compiled request; failing to get it is not the provider's fault. */
async function loadCompiledRequest(input: LlmPhaseInput, cache: RequestCache): Promise<LoadedRequest> {
  try {
    return await loadRequest(input, cache);
  } catch (error) {
    // The workflow did not hand out its request (evicted and replaying too slowly, no worker up).
    if (error instanceof ApplicationFailure) throw error;
    const message = `could not load the compiled request: ${(error as Error).message}`;
    throw failure(FailureType.RequestUnavailable, message, { retryable: true });
  }
}

/** A user abort returns the partial reply; any other cancel (shutdown) throws, so the phase runs again. */
function abortPath(
  context: Context,
  publisher: ReturnType<typeof chunkPublisher>,
  aborted: LlmPhaseResult,
): LlmPhaseResult {
  if (!isUserAbort(context)) throw cancellationError(context);
  publisher.end('aborted');
  return aborted;
}

async function streamReply(
  client: OpenAI,
  request: LlmRequest,
  options: SendOptions,
  stream: StreamAccumulator,
  body: BodyObserver,
): Promise<Reply> {
  const signal = options.signal;
  const chunks = (await client.chat.completions.create(
    request as unknown as OpenAI.ChatCompletionCreateParamsStreaming,
    options,
  )) as AsyncIterable<StreamChunk>;
  for await (const chunk of chunks) {
    stream.add(chunk);
    if (signal.aborted) break;
  }
  // The openai stream ends silently on an abort, a reset connection and a server that just stops.
  if (signal.aborted) throw signal.reason;
  if (!body.ended) throw incompleteReply(`the stream broke off after ${stream.content.length} characters`);
  // A 200 stream that ended without a single event (llama-cpp-python streaming with tool_choice auto).
  if (body.events === 0) throw emptyReply();
  if (stream.finishReason === null)
    throw incompleteReply(`the stream ended without a finish_reason after ${stream.content.length} characters`);
  if (!body.sawDone) throw incompleteReply('the stream ended without [DONE]');
  return stream.reply();
}

/** Spec 8.2: a non-streamed request in flight is not interrupted by an abort; only a shutdown stops it. */
async function plainReply(client: OpenAI, request: LlmRequest, options: SendOptions): Promise<Reply> {
  const completion = await client.chat.completions.create(
    request as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
    options,
  );
  if (!Array.isArray(completion?.choices) || completion.choices.length === 0)
    throw incompleteReply('the reply has no choices');
  const choice = completion.choices[0]!;
  if (!choice.finish_reason) throw incompleteReply('the reply has no finish_reason');
  const message = (choice?.message ?? {}) as {
    content?: string | null;
    refusal?: string | null;
    tool_calls?: ToolCall[];
    reasoning_details?: JsonValue[];
  };
  const usage = completion.usage;
  return {
    content: message.content || message.refusal || '',
    toolCalls: (message.tool_calls ?? [])
      .filter((call) => call.id && call.function?.name)
      .map((call) => ({ ...call, type: call.type ?? 'function' })),
    reasoningDetails: message.reasoning_details ?? [],
    usage: usage ? providerUsage(usage) : null,
    finishReason: choice.finish_reason,
    streamed: false,
  };
}

/** Publishes the call's text chunks on the side channel, numbered from 0 per attempt. */
function chunkPublisher(sink: ChunkSink | undefined, context: Context, input: LlmPhaseInput) {
  const runId = context.info.workflowExecution?.workflowId ?? '';
  const attempt = context.info.attempt;
  const llmCall = input.llm_call ?? 0;
  let index = 0;
  const enabled = sink !== undefined && llmCall > 0;
  // With output guardrails (`hold_answer`): text tokens wait here until the reply shows it is no answer.
  const held: string[] | undefined = input.hold_answer ? [] : undefined;
  // One numbered entry of this attempt's stream: a text chunk or an argument delta.
  const publishNumbered = (
    entry:
      | { event_type: 'llm_chunk_arrive'; chunk: string }
      | ({ event_type: 'tool_call_arguments_delta' } & ArgumentsDelta),
  ) => {
    if (!enabled) return;
    const { event_type, ...body } = entry;
    // Keys in the order followers have always read them.
    sink.transport.publish({
      event_type,
      protocol_version: PROTOCOL_VERSION,
      run_id: runId,
      iteration: input.iteration,
      llm_call: llmCall,
      attempt,
      chunk_index: index,
      ...body,
      timestamp: new Date().toISOString(),
    } as StreamEvent);
    index += 1;
  };
  const publishText = (text: string) => publishNumbered({ event_type: 'llm_chunk_arrive', chunk: text });
  return {
    announcement: enabled
      ? { stream_url: sink.url, stream_token: sink.tokens.tokenFor(runId), llm_call: llmCall, attempt }
      : {},
    chunk(text: string) {
      if (!enabled || text === '') return;
      if (held) held.push(text);
      else publishText(text);
    },
    /** Publishes the held text (a reply that calls tools is no answer for the output checks). */
    release() {
      for (const text of held?.splice(0) ?? []) publishText(text);
    },
    argumentsDelta(delta: ArgumentsDelta) {
      publishNumbered({ event_type: 'tool_call_arguments_delta', ...delta });
    },
    /**
     * `failed`: this attempt's chunks are superseded; unless the failure is final (`retrying: false`),
     * the next attempt streams the call again from 0.
     */
    end(outcome: 'completed' | 'aborted' | 'failed', failure?: { error: string; retrying: boolean }) {
      if (!enabled) return;
      sink.transport.publish({
        event_type: 'llm_stream_end',
        protocol_version: PROTOCOL_VERSION,
        run_id: runId,
        llm_call: llmCall,
        attempt,
        chunks: index,
        outcome,
        ...failure,
      });
    },
  };
}

function shutdownOnly(context: Context): AbortSignal {
  const controller = new AbortController();
  context.cancellationSignal.addEventListener('abort', () => {
    if (!isUserAbort(context)) controller.abort(context.cancellationSignal.reason);
  });
  return controller.signal;
}

function completedResult(reply: Reply, started: number): LlmPhaseResult {
  let mutations: Mutation[] = [];
  if (reply.toolCalls.length > 0) {
    mutations = [
      {
        type: 'AssistantMessageMutation',
        content: reply.content !== '' ? reply.content : null,
        tool_calls: reply.toolCalls,
        reasoning_details: reply.reasoningDetails,
      },
    ];
  } else if (reply.content !== '') {
    mutations = [{ type: 'AssistantMessageMutation', content: reply.content }];
  }
  return {
    outcome: 'completed',
    mutations,
    usage: reply.usage,
    finish_reason: reply.finishReason,
    duration_ms: Date.now() - started,
    streamed: reply.streamed,
  };
}

/**
 * The workflow fills in the abort reason: it holds it, the activity does not. With output guardrails the
 * partial text is dropped: it was never checked, so it reaches neither the transcript nor any reader.
 */
function abortedResult(attempt: PhaseAttempt): LlmPhaseResult {
  const { stream, started, sentStreamed: streamed } = attempt;
  return {
    outcome: 'aborted',
    mutations: [truncatedReplyMutation(attempt.input.hold_answer ? '' : stream.content)],
    partial_tool_calls: stream.toolCalls().map((call) => ({ id: call.id, name: call.function.name })),
    usage: stream.usage,
    finish_reason: null,
    duration_ms: Date.now() - started,
    ...(streamed !== undefined ? { streamed } : {}),
  };
}
