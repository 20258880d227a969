import { Context } from '@temporalio/activity';
import OpenAI from 'openai';
import type { JsonValue, Mutation, ToolCall } from '../context';
import type { LlmPhaseInput, LlmPhaseResult, LlmRequest, TokenUsage } from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import type { ChunkTransport } from '../streaming/chunk';
import { cancellationError, isUserAbort, startHeartbeat } from './activity-context';
import { classifyProviderError } from './provider-errors';
import { loadRequest, type RequestCache } from './request-source';
import { StreamAccumulator, type ArgumentsDelta, type StreamChunk } from './stream-accumulator';

export interface ProviderSettings {
  baseURL?: string;
  apiKey?: string;
  /** One attempt's HTTP timeout; keep it below the activity's start-to-close timeout. */
  timeoutMs: number;
}

/** Where token chunks go (the side channel), and the URL followers read them from. */
export interface ChunkSink {
  transport: ChunkTransport;
  url: string;
}

interface Reply {
  content: string;
  toolCalls: ToolCall[];
  reasoningDetails: JsonValue[];
  usage: TokenUsage | null;
  finishReason: string | null;
}

/**
 * The LLM phase: one chat completion, streamed when the request says so. Returns the phase's patches
 * (spec 7.4). On a user abort it returns `[AssistantTruncatedMutation]` with the text received so far;
 * on any other cancel (worker shutdown) it throws so the phase runs again.
 */
export function createLlmPhase(settings: ProviderSettings, cache: RequestCache, registry: AgentRegistry, chunks?: ChunkSink) {
  // One retry layer: Temporal's. The client's own retries would multiply it.
  const client = new OpenAI({ baseURL: settings.baseURL, apiKey: settings.apiKey ?? 'unset', maxRetries: 0, timeout: settings.timeoutMs });

  return async function llmPhase(input: LlmPhaseInput): Promise<LlmPhaseResult> {
    const context = Context.current();
    const started = Date.now();
    const request = await loadRequest(input, cache);
    const publisher = chunkPublisher(chunks, context, input);
    const stream = new StreamAccumulator(
      (text) => publisher.chunk(text),
      (delta) => publisher.argumentsDelta(delta),
    );
    // The heartbeat also tells followers where this call's tokens stream from (nothing goes to history).
    const stopHeartbeat = startHeartbeat(context, () => ({ iteration: input.iteration, chars: stream.content.length, ...publisher.announcement }));
    const signal = context.cancellationSignal;
    let reply: Reply;
    try {
      reply = request.stream ? await streamReply(client, request, signal, stream) : await plainReply(client, request, shutdownOnly(context));
    } catch (error) {
      // An abort before the first byte throws (APIUserAbortError): that is the abort path, not a failure.
      if (!signal.aborted) throw classifyProviderError(error);
      if (!isUserAbort(context)) throw cancellationError(context);
      publisher.end();
      return abortedResult(stream, started);
    } finally {
      stopHeartbeat();
    }
    // The openai stream ends silently when aborted: a partial answer must not pass as complete.
    if (request.stream && signal.aborted) {
      if (!isUserAbort(context)) throw cancellationError(context);
      publisher.end();
      return abortedResult(stream, started);
    }
    if (!request.stream) publisher.chunk(reply.content);
    publisher.end();
    const result = completedResult(reply, started);
    // A typed function's final reply is checked here, where its zod schema lives.
    if (input.output_check && reply.toolCalls.length === 0) return { ...result, output_check: registry.llmFunction(input.output_check).checkOutput(reply.content) as LlmPhaseResult['output_check'] };
    return result;
  };
}

async function streamReply(client: OpenAI, request: LlmRequest, signal: AbortSignal, stream: StreamAccumulator): Promise<Reply> {
  const chunks = (await client.chat.completions.create(request as unknown as OpenAI.ChatCompletionCreateParamsStreaming, { signal })) as AsyncIterable<StreamChunk>;
  for await (const chunk of chunks) {
    stream.add(chunk);
    if (signal.aborted) break;
  }
  return { content: stream.content, toolCalls: stream.toolCalls(), reasoningDetails: stream.reasoningDetails, usage: stream.usage, finishReason: stream.finishReason };
}

/** Spec 8.2: a non-streamed request in flight is not interrupted by an abort; only a shutdown stops it. */
async function plainReply(client: OpenAI, request: LlmRequest, signal: AbortSignal): Promise<Reply> {
  const completion = await client.chat.completions.create(request as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming, { signal });
  const choice = completion.choices[0];
  const message = (choice?.message ?? {}) as { content?: string | null; tool_calls?: ToolCall[]; reasoning_details?: JsonValue[] };
  const usage = completion.usage;
  return {
    content: message.content ?? '',
    toolCalls: (message.tool_calls ?? []).filter((call) => call.id && call.function?.name).map((call) => ({ ...call, type: call.type ?? 'function' })),
    reasoningDetails: message.reasoning_details ?? [],
    usage: usage ? { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens } : null,
    finishReason: choice?.finish_reason ?? null,
  };
}

/** Publishes the call's text chunks on the side channel, numbered from 0 per attempt. */
function chunkPublisher(sink: ChunkSink | undefined, context: Context, input: LlmPhaseInput) {
  const runId = context.info.workflowExecution?.workflowId ?? '';
  const attempt = context.info.attempt;
  const llmCall = input.llm_call ?? 0;
  let index = 0;
  const enabled = sink !== undefined && llmCall > 0;
  return {
    announcement: enabled ? { stream_url: sink.url, llm_call: llmCall, attempt } : {},
    chunk(text: string) {
      if (!enabled || text === '') return;
      sink.transport.publish({ event_type: 'llm_chunk_arrive', run_id: runId, iteration: input.iteration, llm_call: llmCall, attempt, chunk_index: index, chunk: text, timestamp: new Date().toISOString() });
      index += 1;
    },
    argumentsDelta(delta: ArgumentsDelta) {
      if (!enabled) return;
      sink.transport.publish({ event_type: 'tool_call_arguments_delta', run_id: runId, iteration: input.iteration, llm_call: llmCall, attempt, chunk_index: index, ...delta, timestamp: new Date().toISOString() });
      index += 1;
    },
    end() {
      if (enabled) sink.transport.publish({ event_type: 'llm_stream_end', run_id: runId, llm_call: llmCall, attempt, chunks: index });
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
    mutations = [{ type: 'AssistantMessageMutation', content: reply.content !== '' ? reply.content : null, tool_calls: reply.toolCalls, reasoning_details: reply.reasoningDetails }];
  } else if (reply.content !== '') {
    mutations = [{ type: 'AssistantMessageMutation', content: reply.content }];
  }
  return {
    outcome: 'completed',
    mutations,
    usage: reply.usage,
    finish_reason: reply.finishReason,
    duration_ms: Date.now() - started,
  };
}

/** The workflow fills in the abort reason: it holds it, the activity does not. */
function abortedResult(stream: StreamAccumulator, started: number): LlmPhaseResult {
  return {
    outcome: 'aborted',
    mutations: [{ type: 'AssistantTruncatedMutation', partial_content: stream.content, abort_reason: '' }],
    partial_tool_calls: stream.toolCalls().map((call) => ({ id: call.id, name: call.function.name })),
    usage: stream.usage,
    finish_reason: null,
    duration_ms: Date.now() - started,
  };
}
