import { parseSummary, renderSummary, type Message } from '../context';
import type { ContextSettings } from './context-settings';

/**
 * Context compaction, planned by pure functions over a transcript (the workflow carries the plan out):
 * which old tool results to clear, what to summarize, what stays verbatim. Sizes are in tokens at a
 * rate per character: the rate the provider's own counts showed, never below 1 token per 3 characters
 * (English runs about 4), so an unknown model is measured on the high side.
 */

/** Characters per token the runtime assumes where the provider's counts show no more tokens than this. */
export const CHARS_PER_TOKEN = 3;
/** What one message costs beyond its text (role, separators), as providers count it. */
const MESSAGE_OVERHEAD_TOKENS = 4;

/** The provider's count of one request, and that request's size in characters: how the run measures. */
export interface ContextMeasure {
  request_chars: number;
  prompt_tokens: number;
}

/** Tokens per character: the provider's, when it counted more than the default assumes. */
export function tokenRate(measure: ContextMeasure | null): number {
  const floor = 1 / CHARS_PER_TOKEN;
  if (!measure || measure.request_chars <= 0) return floor;
  return Math.max(floor, measure.prompt_tokens / measure.request_chars);
}

/**
 * The size of a request of `chars` characters: the provider's last count plus what was added since, at
 * the rate; a request that shrank (a compaction) is measured whole at the rate.
 */
export function estimateRequestTokens(chars: number, measure: ContextMeasure | null): number {
  const rate = tokenRate(measure);
  if (measure && chars >= measure.request_chars)
    return measure.prompt_tokens + Math.ceil((chars - measure.request_chars) * rate);
  return Math.ceil(chars * rate);
}

function messageTokens(message: Message, rate = 1 / CHARS_PER_TOKEN): number {
  return Math.ceil(JSON.stringify(message).length * rate) + MESSAGE_OVERHEAD_TOKENS;
}

export function messagesTokens(messages: readonly Message[], rate = 1 / CHARS_PER_TOKEN): number {
  return messages.reduce((total, message) => total + messageTokens(message, rate), 0);
}

/** How full a context may be after a compaction: room for several calls before the next one. */
export function compactionTarget(window: number, settings: Pick<ContextSettings, 'compact_at'>): number {
  return Math.floor(window * Math.min(0.5, settings.compact_at * 0.6));
}

const SUMMARY_START = '<context_compaction_summary>';
const SUMMARY_END = '</context_compaction_summary>';

/** Whether a message is a compaction summary (the runtime's, or SelfRef's `selfref_compact`). */
export function isSummaryMessage(message: Message | undefined): boolean {
  const content = message?.['content'];
  if (message?.['role'] !== 'assistant' || typeof content !== 'string') return false;
  const text = content.trim();
  return text.startsWith(SUMMARY_START) && text.endsWith(SUMMARY_END);
}

/**
 * A summary as the transcript keeps it: a reply in the spec's seven-field format (5.3) rendered
 * canonically; anything else (a model that did not follow the format) kept as plain text inside the
 * summary tags, so a later compaction still finds and updates it.
 */
export function summaryMessage(reply: string): Message {
  const parsed = parseSummary(reply.trim()) ?? parseSummary(`${SUMMARY_START}\n${reply.trim()}\n${SUMMARY_END}`);
  if (parsed) return { role: 'assistant', content: renderSummary(parsed) };
  const text = reply.trim().replace(SUMMARY_START, '').replace(SUMMARY_END, '').trim();
  return { role: 'assistant', content: `${SUMMARY_START}\n${text || '(the summary came back empty)'}\n${SUMMARY_END}` };
}

const CLEARED_PREFIX = '[tool result cleared to save context:';

/** The stub an old tool result is replaced with: the call stays, and the model knows what was there. */
function clearedResult(chars: number): string {
  return `${CLEARED_PREFIX} ${chars.toLocaleString('en-US')} characters]`;
}

/** Whether a tool result's content is the stub a compaction left in its place. */
export function isClearedResult(content: unknown): boolean {
  return typeof content === 'string' && content.startsWith(CLEARED_PREFIX);
}

/** Text cut to about `maxChars`, its head and tail kept around a visible marker. */
function shortenText(text: string, maxChars: number): string {
  const keep = Math.max(0, maxChars - 120);
  if (text.length <= maxChars) return text;
  const head = Math.ceil(keep * 0.6);
  const tail = keep - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${cut.toLocaleString('en-US')} characters cut to fit the context window ...]\n${tail > 0 ? text.slice(-tail) : ''}`;
}

/**
 * A message whose text is cut to about `maxTokens`, its head and tail kept around a visible marker.
 * Only string contents are cut; a message with nothing to cut comes back as it was.
 */
function shortenMessage(message: Message, maxTokens: number, rate = 1 / CHARS_PER_TOKEN): Message {
  const content = message['content'];
  if (typeof content !== 'string') return message;
  const others = JSON.stringify({ ...message, content: '' }).length;
  let maxChars = Math.max(0, Math.floor((maxTokens - MESSAGE_OVERHEAD_TOKENS) / rate) - others);
  // Sizes count JSON text, where quotes and backslashes take two characters: cut again until it fits.
  for (let round = 0; ; round += 1) {
    const shortened = shortenText(content, maxChars);
    const candidate = shortened === content ? message : { ...message, content: shortened };
    const tokens = messageTokens(candidate, rate);
    if (tokens <= maxTokens || maxChars === 0 || round === 8) return candidate;
    const chars = Math.min(maxChars, content.length);
    maxChars = Math.max(0, Math.floor((chars * (maxTokens - MESSAGE_OVERHEAD_TOKENS)) / tokens) - 1);
  }
}

/**
 * The transcript in units a cut may not split: an assistant message that calls tools together with the
 * tool messages that answer it; every other message alone.
 */
function messageUnits(messages: readonly Message[]): Message[][] {
  const units: Message[][] = [];
  for (let index = 0; index < messages.length;) {
    const message = messages[index]!;
    const calls = message['tool_calls'];
    if (message['role'] === 'assistant' && Array.isArray(calls) && calls.length > 0) {
      let end = index + 1;
      while (end < messages.length && messages[end]!['role'] === 'tool') end += 1;
      units.push(messages.slice(index, end));
      index = end;
    } else {
      units.push([message]);
      index += 1;
    }
  }
  return units;
}

export interface CompactionStats {
  /** Old tool results replaced by a stub, and the characters they held. */
  cleared_tool_results: number;
  cleared_chars: number;
  /** Messages folded into the summary (0 when no summary was needed). */
  summarized_messages: number;
  /** Messages cut with a marker to fit (a single message larger than the room it may have). */
  shortened_messages: number;
}

/**
 * What a plan measures with: the target it clears and summarizes down to, the limit no message is cut
 * below unless the whole would pass it (a task that fits stays whole), the tail kept verbatim, the rate.
 */
export interface CompactionBudget {
  target: number;
  /** At least `target`; defaults to it. */
  limit?: number;
  keepRecent: number;
  strategy: ContextSettings['strategy'];
  rate: number;
}

/**
 * What a compaction does to a transcript: either the cleared transcript fits (`done`), or the middle
 * goes into a summary between `head` and `tail` (`summarize`); `previousSummary` is the summary an
 * earlier compaction left, which the new one updates.
 */
export type CompactionPlan =
  | { kind: 'done'; messages: Message[]; stats: CompactionStats }
  | {
      kind: 'summarize';
      head: Message[];
      previousSummary: string | null;
      middle: Message[];
      tail: Message[];
      /** Tokens the summary may take. */
      summaryTokens: number;
      stats: CompactionStats;
    };

/**
 * Plans a compaction of `transcript` down to `budget.target` tokens. The leading system message (with
 * its SelfRef experiences) and the first user message (the task) always stay; so does the newest
 * `keepRecent` tokens' worth of whole units. Old tool results outside that tail are cleared first,
 * oldest first, as long as the transcript is over the target; when clearing is not enough (or not in
 * the strategy), the middle is summarized. Tool calls and their results are never separated.
 */
export function planCompaction(transcript: readonly Message[], budget: CompactionBudget): CompactionPlan {
  const { target, keepRecent, strategy, rate } = budget;
  const stats: CompactionStats = {
    cleared_tool_results: 0,
    cleared_chars: 0,
    summarized_messages: 0,
    shortened_messages: 0,
  };
  const { head, previousSummary, rest } = splitHead(transcript);
  const summaryTokens = Math.max(64, Math.min(4000, Math.floor(target / 4)));
  const units = messageUnits(rest);
  // The tail: the newest whole units within the tail's room (at least the newest unit).
  const room = Math.max(0, Math.min(keepRecent, target - messagesTokens(head, rate) - summaryTokens));
  let tailStart = units.length;
  for (let used = 0; tailStart > 0; tailStart -= 1) {
    const cost = messagesTokens(units[tailStart - 1]!, rate);
    if (used + cost > room && tailStart < units.length) break;
    used += cost;
  }
  const middle = units.slice(0, tailStart).flat();
  const tail = units.slice(tailStart).flat();
  const summary = previousSummary === null ? [] : [summaryMessage(previousSummary)];
  let total = messagesTokens([...head, ...summary, ...middle, ...tail], rate);
  if (strategy.includes('clear_tool_results')) {
    for (const [index, message] of middle.entries()) {
      if (total <= target) break;
      const content = message['content'];
      if (message['role'] !== 'tool' || typeof content !== 'string' || isClearedResult(content)) continue;
      const cleared = { ...message, content: clearedResult(content.length) };
      if (messageTokens(cleared, rate) >= messageTokens(message, rate)) continue;
      total += messageTokens(cleared, rate) - messageTokens(message, rate);
      middle[index] = cleared;
      stats.cleared_tool_results += 1;
      stats.cleared_chars += content.length;
    }
  }
  if (total > target && strategy.includes('summarize') && middle.length > 0) {
    stats.summarized_messages = middle.length;
    return { kind: 'summarize', head, previousSummary, middle, tail, summaryTokens, stats };
  }
  const messages = fitMessages(
    [...head, ...summary, ...middle, ...tail],
    Math.max(target, budget.limit ?? 0),
    rate,
    stats,
  );
  return { kind: 'done', messages, stats };
}

/** The transcript after a summary: head, the summary, the tail; cut further only if it still does not fit. */
export function summarizedTranscript(
  plan: Extract<CompactionPlan, { kind: 'summarize' }>,
  summary: string,
  budget: Pick<CompactionBudget, 'target' | 'limit' | 'rate'>,
): Message[] {
  const message = shortenMessage(summaryMessage(summary), plan.summaryTokens, budget.rate);
  const limit = Math.max(budget.target, budget.limit ?? 0);
  return fitMessages([...plan.head, message, ...plan.tail], limit, budget.rate, plan.stats);
}

/**
 * The system message (kept whole: it holds SelfRef's experiences), the first user message (the task)
 * and the summary an earlier compaction left; then the rest, in order.
 */
function splitHead(transcript: readonly Message[]): {
  head: Message[];
  previousSummary: string | null;
  rest: Message[];
} {
  const rest = [...transcript];
  const head: Message[] = [];
  if (rest[0]?.['role'] === 'system') head.push(rest.shift()!);
  // A user message never sits inside a unit (a call and its results), so taking it out splits none.
  const task = rest.findIndex((message) => message['role'] === 'user');
  if (task >= 0) head.push(...rest.splice(task, 1));
  const summaryAt = rest.findIndex((message) => isSummaryMessage(message));
  const previousSummary = summaryAt >= 0 ? String(rest.splice(summaryAt, 1)[0]!['content']) : null;
  return { head, previousSummary, rest };
}

/**
 * Cuts the largest messages (never the system message) until the whole fits `target`, each to the room
 * the others leave, so a single message larger than the window still leaves a valid, fitting context.
 */
function fitMessages(messages: Message[], target: number, rate: number, stats: CompactionStats): Message[] {
  const fitted = [...messages];
  const protectedCount = fitted[0]?.['role'] === 'system' ? 1 : 0;
  const shortened = new Set<number>();
  for (let round = 0; round < fitted.length && messagesTokens(fitted, rate) > target; round += 1) {
    let largest = -1;
    for (let index = protectedCount; index < fitted.length; index += 1) {
      if (typeof fitted[index]!['content'] !== 'string') continue;
      if (largest < 0 || messageTokens(fitted[index]!, rate) > messageTokens(fitted[largest]!, rate)) largest = index;
    }
    if (largest < 0) break;
    const others = messagesTokens(fitted, rate) - messageTokens(fitted[largest]!, rate);
    const cut = shortenMessage(fitted[largest]!, Math.max(MESSAGE_OVERHEAD_TOKENS + 40, target - others), rate);
    if (cut === fitted[largest]) break;
    fitted[largest] = cut;
    shortened.add(largest);
  }
  stats.shortened_messages += shortened.size;
  return fitted;
}

/**
 * The middle of a transcript as text for the summary call, in chunks of at most `roomTokens` each (one
 * call per chunk, each updating the summary of the ones before). A message larger than a chunk is cut
 * with a visible marker. At most one chunk per message: the calls are bounded by the transcript.
 */
export function summaryChunks(middle: readonly Message[], roomTokens: number, rate: number): string[] {
  const roomChars = Math.max(200, Math.floor(roomTokens / rate));
  const chunks: string[] = [];
  let current = '';
  for (const message of middle) {
    const text = shortenText(renderForSummary(message), roomChars);
    if (current !== '' && current.length + text.length + 2 > roomChars) {
      chunks.push(current);
      current = '';
    }
    current = current === '' ? text : `${current}\n\n${text}`;
  }
  if (current !== '') chunks.push(current);
  return chunks;
}

function renderForSummary(message: Message): string {
  const role = String(message['role']);
  const content = message['content'];
  const text =
    typeof content === 'string' ? content : content === null || content === undefined ? '' : JSON.stringify(content);
  const calls = Array.isArray(message['tool_calls'])
    ? (message['tool_calls'] as Array<{ function?: { name?: string; arguments?: string } }>)
        .map((call) => `\ncalls ${call.function?.name ?? '?'}(${call.function?.arguments ?? ''})`)
        .join('')
    : '';
  return `[${role}] ${text}${calls}`;
}

/**
 * The request messages of one summary call: the instructions (the spec's seven fields, 5.3), the
 * summary so far, and the part of the conversation to fold in.
 */
export function summaryRequestMessages(
  previousSummary: string | null,
  chunk: string,
  summaryTokens: number,
): Message[] {
  const instructions = [
    'You compact the working context of an AI agent so it can go on with its task in less space.',
    'Answer with the summary only, in exactly this format, and nothing before or after it:',
    SUMMARY_START,
    '## Goal',
    '<the task, in a sentence or two>',
    '## Instruction',
    '<what the user asked for and the constraints that still apply>',
    '## Discoveries',
    '- <a fact learned that later steps need>',
    '## Completed',
    '- <a step done, with its result>',
    '## Current Status',
    '<where the work stands now>',
    '## Likely next work',
    '- <the next step>',
    '## Relevant files/directories',
    '- <a path, an id or a name the work refers to>',
    SUMMARY_END,
    `Keep it under ${summaryTokens} tokens. Keep names, numbers, ids and paths exactly as written.`,
  ].join('\n');
  const earlier = previousSummary
    ? `The summary of the work so far (update it; keep what still matters):\n${previousSummary}\n\n`
    : '';
  return [
    { role: 'system', content: instructions },
    { role: 'user', content: `${earlier}The conversation to fold into the summary:\n\n${chunk}` },
  ];
}
