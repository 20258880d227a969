import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { failure, FailureType } from '../../common';
import type { JsonObject, Message } from '../../context';
import {
  addUsage,
  compactionTarget,
  estimateRequestTokens,
  keepRecentTokens,
  messagesTokens,
  planCompaction,
  replyContent,
  summarizedTranscript,
  summaryChunks,
  summaryRequestMessages,
  tokenRate,
  type CompactionStats,
  type ContextOverflow,
  type LlmPhaseResult,
  type TokenUsage,
} from '../../runtime';
import type { LoopContext } from './loop-context';
import { affordable, charge, type BudgetStop } from './budget-gate';
import { callLlmPhase } from './llm-call';
import { commit, contextWindow, emit, type Run } from '../run/run-state';

/** Why and from where a compaction starts: the request's size and the window it must fit. */
export interface CompactionTrigger {
  reason: 'proactive' | 'reactive';
  tokens: number;
  window: number;
}

/** Words of the instructions and framing of a summary call, beside its chunk (an upper bound). */
const SUMMARY_CALL_OVERHEAD_TOKENS = 600;

/**
 * Before a call: a compaction is due when the request (the provider's last count plus what was added
 * since) would pass `compact_at` of a known window. Records the estimate either way.
 */
export function proactiveCompaction(run: Run, requestChars: number, reservedOutput = 0): CompactionTrigger | null {
  const tokens = estimateRequestTokens(requestChars, run.durable.context.measure);
  run.durable.context.tokens = tokens;
  const window = contextWindow(run);
  // The completion the request reserves (max_tokens) has to fit the window beside it.
  if (window === null || tokens + reservedOutput <= window * run.settings.contextSettings.compact_at) return null;
  return { reason: 'proactive', tokens, window };
}

/** The provider's `context_length_exceeded` behind a failed model call, with the sizes it stated. */
export function contextOverflowIn(error: unknown): ContextOverflow | null {
  const cause = error instanceof ActivityFailure ? error.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== FailureType.ContextTooLong) return null;
  const details = (cause.details?.[0] ?? {}) as ContextOverflow;
  return {
    ...(typeof details.window_tokens === 'number' ? { window_tokens: details.window_tokens } : {}),
    ...(typeof details.request_tokens === 'number' ? { request_tokens: details.request_tokens } : {}),
  };
}

/**
 * After the provider refused a request as too long: what it said is recorded (its count measures the
 * request, its window bounds the next ones), and the compaction to run before the call is tried again.
 * Without a stated window the refused request's size bounds it.
 */
export function reactiveCompaction(run: Run, overflow: ContextOverflow, requestChars: number): CompactionTrigger {
  if (overflow.request_tokens !== undefined)
    run.durable.context.measure = { request_chars: requestChars, prompt_tokens: overflow.request_tokens };
  const tokens = overflow.request_tokens ?? estimateRequestTokens(requestChars, run.durable.context.measure);
  if (overflow.window_tokens !== undefined)
    run.durable.context.learned_window_tokens = Math.min(
      overflow.window_tokens,
      run.durable.context.learned_window_tokens ?? overflow.window_tokens,
    );
  const window = contextWindow(run) ?? Math.max(1, Math.floor(tokens * 0.75));
  run.durable.context.tokens = tokens;
  return { reason: 'reactive', tokens, window: Math.min(window, overflow.window_tokens ?? window) };
}

/**
 * Shrinks the context to fit the window, as the spec's own patch: a `ContextReplaceMutation` built from
 * a plan (`planCompaction`): old tool results cleared to stubs, and when that is not enough the middle
 * summarized by model calls that offer no tools. The system message, the task and the newest
 * `keep_recent_tokens` stay; an earlier summary is updated, not summarized again. A compaction that
 * cannot bring the request under `compact_at` of the window ends the run with `ContextTooLong`, saying
 * what it tried; an abort during a summary call leaves the context as it was, and so does a summary
 * call the budget cannot afford (the step then answers `budget_exhausted`).
 */
export async function compactContext(
  loop: LoopContext,
  trigger: CompactionTrigger,
  iteration: number,
): Promise<BudgetStop | null> {
  const run = loop.run;
  const settings = run.settings.contextSettings;
  const rate = tokenRate(run.durable.context.measure);
  // What the request holds beside the transcript (the prompt contract, tool definitions, options).
  const overhead = Math.max(0, trigger.tokens - messagesTokens(run.durable.transcript, rate));
  const limit = Math.floor(trigger.window * settings.compact_at);
  const target = Math.max(64, compactionTarget(trigger.window, settings) - overhead);
  // No message is cut below this unless the whole would pass it: what fits under compact_at stays whole.
  const fitLimit = Math.max(target, limit - overhead);
  const base = { reason: trigger.reason, tokens_before: trigger.tokens, window_tokens: trigger.window };
  emit(run, { event_type: 'context_compaction_start', ...base, target_tokens: target + overhead }, iteration);
  const plan = planCompaction(run.durable.transcript, {
    target,
    limit: fitLimit,
    keepRecent: keepRecentTokens(settings, trigger.window),
    strategy: settings.strategy,
    rate,
  });
  let messages: Message[];
  let usage: TokenUsage | null = null;
  let calls = 0;
  if (plan.kind === 'summarize') {
    let summary = plan.previousSummary;
    const room = Math.max(256, Math.floor(trigger.window * 0.5) - plan.summaryTokens - SUMMARY_CALL_OVERHEAD_TOKENS);
    for (const chunk of summaryChunks(plan.middle, room, rate)) {
      const messages = summaryRequestMessages(summary, chunk, plan.summaryTokens);
      const estimate = {
        input_tokens: messagesTokens(messages, rate) + SUMMARY_CALL_OVERHEAD_TOKENS,
        output_tokens: plan.summaryTokens,
        llm_calls: 1,
      };
      const stop = await affordable(run, estimate);
      if (stop && !run.live.abort.requested) {
        emit(
          run,
          compactionEnd(base, { after: trigger.tokens, stats: plan.stats, calls, usage, stoppedBy: 'budget' }),
          iteration,
        );
        return stop;
      }
      const reply = await summaryCall(loop, messages, iteration);
      calls += 1;
      usage = addUsage(usage, reply.usage);
      run.durable.usage = addUsage(run.durable.usage, reply.usage);
      charge(run, reply, estimate.input_tokens);
      if (reply.outcome === 'aborted' || run.live.abort.requested) {
        emit(
          run,
          compactionEnd(base, { after: trigger.tokens, stats: plan.stats, calls, usage, stoppedBy: 'abort' }),
          iteration,
        );
        return null;
      }
      summary = replyContent(reply);
    }
    messages = summarizedTranscript(plan, summary ?? '', { target, limit: fitLimit, rate });
  } else messages = plan.messages;
  const after = overhead + messagesTokens(messages, rate);
  if (after >= trigger.tokens || after > limit)
    throw failure(FailureType.ContextTooLong, cannotFit(trigger, { limit, after, overhead, stats: plan.stats, calls }));
  commit(run, [{ type: 'ContextReplaceMutation', messages }]);
  run.durable.context.compactions += 1;
  run.durable.context.tokens = after;
  emit(run, compactionEnd(base, { after, stats: plan.stats, calls, usage }), iteration);
  return null;
}

/** What a compaction did: its size after, what it cut, its summary calls and their usage, what stopped it. */
interface CompactionOutcome {
  after: number;
  stats: CompactionStats;
  calls: number;
  usage: TokenUsage | null;
  stoppedBy?: 'abort' | 'budget';
}

function compactionEnd(
  base: { reason: 'proactive' | 'reactive'; tokens_before: number; window_tokens: number },
  { after, stats, calls, usage, stoppedBy }: CompactionOutcome,
) {
  return {
    event_type: 'context_compaction_end' as const,
    ...base,
    tokens_after: after,
    ...stats,
    summary_calls: calls,
    usage,
    ...(stoppedBy === 'abort' ? { aborted: true as const } : {}),
    ...(stoppedBy === 'budget' ? { budget_exhausted: true as const } : {}),
  };
}

function cannotFit(
  trigger: CompactionTrigger,
  {
    limit,
    after,
    overhead,
    stats,
    calls,
  }: Omit<CompactionOutcome, 'usage' | 'stoppedBy'> & { limit: number; overhead: number },
): string {
  const tried = [
    `cleared ${stats.cleared_tool_results} old tool result(s)`,
    `summarized ${stats.summarized_messages} message(s) in ${calls} call(s)`,
    `shortened ${stats.shortened_messages} message(s)`,
  ].join(', ');
  return (
    `the context does not fit the model's window of ${trigger.window} tokens: a ${trigger.reason} compaction ` +
    `${tried}, leaving about ${after} tokens (from ${trigger.tokens}; at most ${limit} may be sent). ` +
    `The system prompt, tool definitions and anything that cannot be cut take about ${overhead} tokens of that ` +
    `beside the messages kept; a larger window (context.window_tokens) or a shorter prompt is needed.`
  );
}

/** One summary call: the agent's model and options, no tools, not streamed. */
async function summaryCall(loop: LoopContext, messages: Message[], iteration: number): Promise<LlmPhaseResult> {
  const {
    tool_choice: _choice,
    parallel_tool_calls: _parallel,
    response_format: _format,
    ...options
  } = loop.agent.llm_options as JsonObject;
  const request = { ...options, model: loop.agent.model, messages, stream: false };
  const written = loop.run.live.requestWriter.write(request);
  return callLlmPhase(loop, request, written, { iteration, purpose: 'compaction' }, 'context compaction');
}
