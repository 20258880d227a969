import type { AgentRunResult, LoggedRunEvent, RunEvent } from '../runtime';
import type { StreamEvent, StreamOffset } from '../streaming/chunk';
import { withAccumulatedContent } from '../streaming/accumulated-content';
import { findStreamSource, readChunks } from '../streaming/chunk-client';
import { eventsQuery } from '../common';
import { RunHandle } from './patchloop-client';
import { WorkflowTaskWatch } from './task-watch';
import { workflowResult } from './workflow-result';

/** One human-readable line per coarse event, or null for events not worth a line. */
export function describeEvent(event: LoggedRunEvent): string | null {
  switch (event.event_type) {
    case 'react_start':
      return `run started: agent ${event.agent}, tools ${event.available_tools.join(', ') || 'none'}`;
    case 'react_iteration_start':
      return `iteration ${event.iteration}`;
    case 'user_message_received':
      return `user message queued: ${preview(event.content)}`;
    case 'llm_call_start':
      return `  model call ${event.llm_call} (${event.message_count} messages${event.with_tools ? '' : ', no tools'})`;
    case 'llm_call_end': {
      const calls = event.tool_calls.map((call) => call.name).join(', ');
      const tokens = event.usage
        ? `, ${event.usage.estimated ? '~' : ''}${event.usage.total_tokens} tokens${event.usage.estimated ? ' (estimated)' : ''}`
        : '';
      const what =
        event.outcome === 'refused'
          ? 'refused by the provider: the context is too long'
          : event.outcome === 'aborted'
            ? `aborted after ${event.content.length} chars`
            : calls
              ? `asks for ${calls}`
              : `answered ${event.content_chars ?? event.content.length} chars`;
      return `  model call ${event.llm_call} ${what} (${event.duration_ms} ms${tokens})`;
    }
    case 'tool_call_start':
      return `  -> ${event.tool_name} ${JSON.stringify(event.arguments)}`;
    case 'tool_call_end':
      return `  <- ${event.tool_name}: ${preview(JSON.stringify(event.result))} (${event.duration_ms} ms)`;
    case 'tool_call_error':
      return `  <- ${event.tool_name} failed: ${event.error}`;
    case 'approval_requested':
      return `  ? ${event.tool_name} ${JSON.stringify(event.arguments)} waits for approval (call ${event.tool_call_id})`;
    case 'approval_decided':
      return `  ${event.approved ? 'approved' : 'rejected'} ${event.tool_name} (call ${event.tool_call_id})${event.reason ? `: ${event.reason}` : ''}${event.by === 'timeout' ? ', nobody decided in time' : ''}`;
    case 'tool_calls_batch_end':
      return event.cancelled.length > 0 ? `  cancelled: ${event.cancelled.join(', ')}` : null;
    case 'subagent_started':
      return `  => ${event.agent} agent (${event.child_workflow_id})`;
    case 'subagent_finished': {
      const tokens = event.usage ? `, ${event.usage.total_tokens} tokens` : '';
      return `  <= ${event.agent} agent ${event.status}${event.error ? `: ${event.error}` : ''}${tokens}`;
    }
    case 'custom_event':
      return event.event_name === 'guardrail_verdict'
        ? `  ${guardrailVerdictLine(event)}`
        : `  * ${event.event_name} ${preview(JSON.stringify(event.data))}`;
    case 'context_compaction_start':
      return `  compacting the context (${event.reason}): about ${event.tokens_before} tokens of a ${event.window_tokens}-token window`;
    case 'context_compaction_end':
      return event.aborted
        ? '  compaction stopped by the abort; the context is as it was'
        : `  compacted the context: ${event.tokens_before} -> ${event.tokens_after} tokens (${compactionWork(event)})`;
    case 'budget_exhausted':
      return event.waiting
        ? `  budget reached (${event.exceeded.join(', ')}): waiting for 'patchloop budget extend'`
        : `  budget reached (${event.exceeded.join(', ')}): the run stops before its next step`;
    case 'budget_extended':
      return `  budget extended: ${JSON.stringify(event.extension)}`;
    case 'mcp_tools_relisted': {
      if (event.problem !== undefined)
        return `  MCP tools not listed again (the run keeps its tools): ${event.problem}`;
      const parts = [
        ...(event.added.length > 0 ? [`added ${event.added.join(', ')}`] : []),
        ...(event.removed.length > 0 ? [`removed ${event.removed.join(', ')}`] : []),
        ...(event.changed.length > 0 ? [`changed ${event.changed.join(', ')}`] : []),
      ];
      return `  MCP tools listed again: ${parts.join('; ') || 'no change'}`;
    }
    case 'wait_started':
      return `  ${event.tool === 'sleep' ? 'sleeping' : `waiting for event '${event.event}'`} until ${event.wake_at}${event.reason ? ` (${preview(event.reason)})` : ''}`;
    case 'wait_ended':
      return `  woke: ${event.woke === 'event' ? `event '${event.event}' came` : event.woke === 'user_message' ? 'a user message came' : 'its time came'} after ${Math.round(event.waited_ms / 100) / 10} s`;
    case 'event_received':
      return `event '${event.name}' delivered${event.key ? ` (key ${event.key})` : ''}: ${event.taken_by_wait ? 'taken by the waiting call' : 'held for the next wait'}`;
    case 'agent_handoff':
      return `handoff: ${event.from} -> ${event.to}${event.reason ? ` (${preview(event.reason)})` : ''}`;
    case 'turn_failed':
      return `turn failed: ${failedTurnText({ type: event.error_type, message: event.message })}`;
    case 'react_end':
      return `run ${event.status} after ${event.total_llm_calls} model call(s) and ${event.total_tool_calls} tool call(s)`;
    default:
      return null;
  }
}

/**
 * A guardrail's verdict in words (`follow`, `show`, the console): the check, the stage (and tool), what it
 * decided and why. The event never holds the text it judged.
 */
export function guardrailVerdictLine(event: Extract<LoggedRunEvent, { event_type: 'custom_event' }>): string {
  const data = (event.data ?? {}) as { stage?: string; check?: string; decision?: string; reason?: string };
  const where = event.tool_name ? `${data.stage} of ${event.tool_name}` : data.stage;
  return `guardrail ${data.check} (${where}): ${data.decision}${data.reason ? `: ${preview(data.reason, 240)}` : ''}`;
}

/**
 * A session's failed turn in words, as `chat`, `send`, `show`, `follow` and the console say it: its
 * error, and that its message stays.
 */
export function failedTurnText(error: { type: string; message: string } | undefined): string {
  const { type, message } = error ?? { type: 'Error', message: 'unknown error' };
  return `${type}: ${message} (the message stays in the session's transcript; send another to go on)`;
}

function compactionWork(event: Extract<LoggedRunEvent, { event_type: 'context_compaction_end' }>): string {
  const work = [
    event.cleared_tool_results > 0 ? `${event.cleared_tool_results} old tool result(s) cleared` : '',
    event.summarized_messages > 0
      ? `${event.summarized_messages} message(s) summarized in ${event.summary_calls} call(s)${event.usage ? ` using ${event.usage.total_tokens} tokens` : ''}`
      : '',
    event.shortened_messages > 0 ? `${event.shortened_messages} message(s) shortened` : '',
  ].filter(Boolean);
  return work.join(', ') || 'nothing to cut';
}

function preview(text: string, limit = 120): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

export interface FollowOutput {
  /** A coarse event (in `seq` order). */
  event(event: RunEvent): void;
  /**
   * A token chunk or argument delta of an LLM call, in order and exactly once per (llm_call, attempt,
   * chunk_index), and the end marker of an attempt that failed (its chunks are superseded by the next
   * attempt's, which start again at chunk_index 0).
   */
  chunk(event: StreamEvent): void;
}

/** Prints human lines, with tokens live between a call's start and end lines; a child run's lines are marked. */
export function textOutput(write: (text: string) => void): FollowOutput {
  let midLine = false;
  // Calls (per run: forks count their own) whose tokens were printed live; for the others the end
  // event's text is printed instead.
  const streamed = new Set<string>();
  const toolNames = new Map<string, string>();
  // What a forked run's lines start with: its fork id, indented by depth.
  const forkMarks = new Map<string, string>();
  const mark = (runId: string) => forkMarks.get(runId) ?? '';
  return {
    event(event) {
      const origin = event.origin;
      if (origin?.fork_id && origin.fork_depth > 0)
        forkMarks.set(event.run_id, `${'  '.repeat(origin.fork_depth - 1)}[${origin.fork_id}] `);
      const prefix = mark(event.run_id);
      // A sub-agent's lines: its agent's name, indented by depth under its caller's.
      if (event.event_type === 'subagent_started')
        forkMarks.set(event.child_workflow_id, `${prefix}  [${event.agent}] `);
      if (event.event_type === 'tool_calls_batch_start')
        for (const call of event.tool_calls) toolNames.set(call.id, call.name);
      if (
        event.event_type === 'llm_call_end' &&
        !streamed.has(`${event.run_id}:${event.llm_call}`) &&
        event.content !== ''
      ) {
        write(`${midLine ? '\n' : ''}${prefix}    ${event.content}${event.content_chars ? '…' : ''}\n`);
        midLine = false;
      }
      const line =
        event.event_type === 'tool_calls_batch_end' && event.cancelled.length > 0
          ? `  cancelled: ${event.cancelled.map((id) => toolNames.get(id) ?? id).join(', ')}`
          : describeEvent(event);
      if (line === null) return;
      write(`${midLine ? '\n' : ''}${prefix}${line}\n`);
      midLine = false;
    },
    chunk(event) {
      const prefix = mark(event.run_id);
      if (event.event_type === 'llm_chunk_arrive') streamed.add(`${event.run_id}:${event.llm_call}`);
      if (event.event_type === 'llm_stream_end' && event.outcome === 'failed') {
        // The broken attempt's text never reaches the transcript; a retry streams the reply again.
        const next = event.retrying === false ? 'no retry' : 'retrying';
        write(
          `${midLine ? '\n' : ''}${prefix}    (attempt ${event.attempt} failed: ${event.error ?? 'error'}; ${next})\n`,
        );
        midLine = false;
        return;
      }
      if (event.event_type !== 'llm_chunk_arrive') return;
      write(`${midLine ? '' : `${prefix}    `}${event.chunk}`);
      midLine = true;
    },
  };
}

/** One JSON object per line: coarse events and token chunks, for other programs. */
export function jsonOutput(write: (text: string) => void): FollowOutput {
  return {
    event: (event) => write(`${JSON.stringify(event)}\n`),
    chunk: (event) => write(`${JSON.stringify(event)}\n`),
  };
}

export interface FollowOptions {
  intervalMs?: number;
  onEvent?: (event: RunEvent) => Promise<void>;
  /** Start after this event (`seq`): a reader that already has the events up to it. */
  after?: number;
  /** Stop following (a reader that went away). */
  signal?: AbortSignal;
  /** Follow child runs (forks, sub-agents) into the same output (default); false: this run's own events only. */
  children?: boolean;
  /** Called each time the follower has every event there is for now, before it waits for more. */
  onCaughtUp?: () => void;
}

/**
 * Follows a run until it ends: coarse events by cursor through the `events` query (never recorded in
 * history; asked again when one of the run's workflow tasks completes, `WorkflowTaskWatch`) and, for the LLM call in progress, live tokens from the side channel. A follower that joins
 * mid-call gets the call's whole prefix first; every chunk is delivered exactly once. Child runs' events
 * (and theirs, at any depth) are forwarded into the same output, each with its own origin, between the
 * parent's `selfref_fork_start` and `selfref_fork_end` (spec 6.6 step 7), or `subagent_started` and
 * `subagent_finished`.
 */
export async function followRun(
  run: RunHandle,
  output: FollowOutput,
  options: FollowOptions = {},
): Promise<AgentRunResult> {
  const result = run.result();
  await followEvents(run, output, options, result, options.signal);
  return result;
}

/**
 * `followRun` without waiting for the result: returns once the run has ended and its log is read to
 * the end, or `options.signal` stopped it. Reports whether the run ended.
 */
export async function followRunEvents(
  run: RunHandle,
  output: FollowOutput,
  options: FollowOptions = {},
): Promise<{ ended: boolean }> {
  let ended = false;
  // The long poll for the result stops with the reader, so nothing of it is left behind.
  const signal = options.signal;
  const result = workflowResult(run.workflow, signal ? { signal } : {}).finally(() => (ended = !signal?.aborted));
  // Its outcome is the caller's business (a failed run ends the follow as well).
  result.catch(() => undefined);
  await followEvents(run, output, options, result, options.signal);
  return { ended };
}

/** How many times a follower asks a run that has ended before it gives up on its last events. */
const TAIL_TRIES = 5;

/** One run's events and tokens until it has ended and its log is read to the end; its forks' too. */
async function followEvents(
  run: RunHandle,
  output: FollowOutput,
  options: FollowOptions,
  result: Promise<unknown>,
  stop: AbortSignal = new AbortController().signal,
): Promise<void> {
  const intervalMs = options.intervalMs ?? 150;
  let settled = false;
  // Forks still running when this run ended without ending them (it failed, or was terminated) are
  // abandoned by Temporal: they are followed a little longer, then let go.
  let failed = false;
  void result.then(
    () => (settled = true),
    () => ((settled = true), (failed = true)),
  );
  const abandon = new AbortController();
  const stopForks = AbortSignal.any([stop, abandon.signal]);
  let after = options.after ?? 0;
  const tokens = new TokenFollower(run, output);
  const forks = new Map<string, Promise<void>>();
  // Asked again when a workflow task completes (the history's long poll), else every `intervalMs`.
  const watch = new WorkflowTaskWatch(run.workflow);
  const watching = watch.start(stop).then(
    () => true,
    () => false,
  );
  let tailFailures = 0;
  for (;;) {
    // Only an answer given after the run ended holds its last events.
    const ended = settled;
    try {
      const page = await run.workflow.query(eventsQuery, { after });
      for (const event of page.events) {
        after = event.seq;
        if (event.event_type === 'llm_call_end') await tokens.finish(event.llm_call);
        const fork = options.children === false ? undefined : forkOf(event);
        // The child's events come before the parent's end of the fork.
        if (fork && !fork.starts) {
          await forks.get(fork.child);
          forks.delete(fork.child);
        }
        output.event(event);
        if (fork?.starts && !forks.has(fork.child)) {
          const child = fork.child;
          const handle = new RunHandle(run.workflow.client.getHandle(child), run.chunks);
          forks.set(
            child,
            followEvents(handle, output, { ...options, after: 0 }, workflowResult(handle.workflow), stopForks),
          );
        }
        // E.g. asking a person to decide a call that waits for approval.
        await options.onEvent?.(event);
        if (event.event_type === 'llm_call_start' && event.stream) tokens.start(event.llm_call);
      }
      // Asked again at once only when the page stopped at its limit (an older worker does not say).
      if (page.events.length > 0 && page.more !== false) continue;
      options.onCaughtUp?.();
    } catch {
      // No worker has answered yet; keep polling until the run ends. Once it has ended, its last events
      // come from a worker replaying it: asked again a few times before giving up.
      if (ended && (tailFailures += 1) < TAIL_TRIES) {
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
        continue;
      }
    }
    if (ended || stop.aborted) break;
    if (settled) continue;
    const woken = (await watching) && (await watch.next(stop).catch(() => false));
    if (!woken) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  tokens.stop();
  const forksDone = Promise.all(forks.values());
  if (failed) {
    const grace = setTimeout(() => abandon.abort(), 2000);
    await forksDone;
    clearTimeout(grace);
  } else await forksDone;
}

/**
 * The child workflow a fork or sub-agent event is about (a fork's id is its memory key), and whether the
 * child starts with it.
 */
function forkOf(event: RunEvent): { child: string; starts: boolean } | undefined {
  if (event.event_type === 'subagent_started' || event.event_type === 'subagent_finished')
    return { child: event.child_workflow_id, starts: event.event_type === 'subagent_started' };
  if (event.event_type !== 'custom_event' || !event.event_name.startsWith('selfref_fork_')) return undefined;
  const key = event.data['memory_key'];
  return typeof key === 'string' ? { child: key, starts: event.event_name === 'selfref_fork_start' } : undefined;
}

/** Streams the tokens of one LLM call at a time from the side channel. */
export class TokenFollower {
  private current: { llmCall: number; abort: AbortController; done: Promise<void>; seen: Set<string> } | null = null;

  constructor(
    private readonly run: RunHandle,
    private readonly output: FollowOutput,
  ) {}

  start(llmCall: number): void {
    this.stop();
    const abort = new AbortController();
    const seen = new Set<string>();
    const done = this.stream(llmCall, abort.signal, seen).catch(() => undefined);
    this.current = { llmCall, abort, done, seen };
  }

  /** Lets the call's stream drain (its end marker arrives right after the last chunk), then stops it. */
  async finish(llmCall: number): Promise<void> {
    if (this.current?.llmCall !== llmCall) return;
    const { done, abort } = this.current;
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 1000))]);
    abort.abort();
    this.current = null;
  }

  stop(): void {
    this.current?.abort.abort();
    this.current = null;
  }

  private async stream(llmCall: number, signal: AbortSignal, seen: Set<string>): Promise<void> {
    // The attempt being read and the next chunk of it; a failed attempt moves on to the next one.
    let attempt: number | undefined;
    let next = 0;
    while (!signal.aborted) {
      const events = await this.chunksFrom(
        { llm_call: llmCall, chunk_index: next, ...(attempt !== undefined ? { attempt } : {}) },
        signal,
      );
      if (!events) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      try {
        for await (const event of events) {
          if (event.llm_call !== llmCall) return;
          if (event.event_type === 'llm_stream_end') {
            if (event.outcome !== 'failed') return;
            this.output.chunk(event);
            if (event.retrying === false) return;
            attempt = event.attempt + 1;
            next = 0;
            // A shared stream carries the retry too; a worker's endpoint may not (it can run elsewhere).
            if (this.run.chunks) continue;
            break;
          }
          const key = `${event.attempt}:${event.chunk_index}`;
          if (seen.has(key)) continue;
          seen.add(key);
          attempt = event.attempt;
          next = event.chunk_index + 1;
          this.output.chunk(event);
        }
      } catch {
        // The worker (or Redis) went away mid-call: a retry elsewhere streams again, look again.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /**
   * The call's chunks from an offset: from the shared stream when the client has one, else from the
   * endpoint of the worker that runs the call (announced in its heartbeat); undefined until it streams.
   */
  private async chunksFrom(from: StreamOffset, signal: AbortSignal): Promise<AsyncIterable<StreamEvent> | undefined> {
    if (this.run.chunks) return withAccumulatedContent(this.run.chunks, this.run.workflowId, from, signal);
    const source = await findStreamSource(this.run.workflow).catch(() => undefined);
    if (!source || source.llm_call !== from.llm_call || (from.attempt !== undefined && source.attempt < from.attempt))
      return undefined;
    return readChunks(source, this.run.workflowId, from, signal);
  }
}
