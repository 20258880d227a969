import { normalizeExperienceText, type Experience } from './experiences';
import { cloneJson, isPlainObject, type JsonValue } from './json';
import { validateToolLinkage } from './linkage';
import { multimodalAssistantSentence, toolCancelledContent, truncatedAssistantContent } from './markers';
import type { Message } from './messages';
import type {
  AssistantMessageMutation,
  ContextSummaryMutation,
  MultimodalToolResultMutation,
  Mutation,
  ToolCancelledMutation,
} from './mutations';
import { buildCanonicalMessages, parseSelfRefSnapshot } from './selfref-snapshot';
import { parsePythonInteger, trim } from './text';

/**
 * `apply_mutations` (spec section 3): folds patches into a copy of the transcript, in order, with
 * experience batching, then checks tool-call linkage. Inputs are never modified; the result shares no
 * object with them. Throws `ContextError` with the spec's message texts.
 */
export function applyMutations(transcript: readonly Message[], mutations: readonly Mutation[]): Message[] {
  return applyMutationsTo(transcript.map(cloneJson), mutations);
}

/**
 * `applyMutations` for a caller that treats messages as values (the workflow's own state): the result
 * shares every message it keeps unchanged with the input, and a changed message is a changed copy.
 * Deep-equal to `applyMutations`; copying a long transcript at every commit was most of a long run's
 * workflow time. `checked`: the input passed the linkage check (it is what a commit returned, unchanged
 * since), so when the result only appends to it, only what was appended is checked (checking the whole
 * at every step was much of a long run's replay).
 */
export function applyMutationsSharing(
  transcript: readonly Message[],
  mutations: readonly Mutation[],
  checked = false,
): Message[] {
  return applyMutationsTo([...transcript], mutations, checked ? transcript : undefined);
}

function applyMutationsTo(
  messages: Message[],
  mutations: readonly Mutation[],
  checked?: readonly Message[],
): Message[] {
  const state: ApplyState = { messages, remembers: [], forgets: [] };
  for (const mutation of mutations) applyOne(state, mutation);
  commitExperienceBatch(state);
  validateToolLinkage(state.messages, checked && startsWith(state.messages, checked) ? checked.length : 0);
  return state.messages;
}

/** Whether `messages` begins with every message of `prefix`, the very same objects. */
function startsWith(messages: readonly Message[], prefix: readonly Message[]): boolean {
  if (messages.length < prefix.length) return false;
  for (let index = 0; index < prefix.length; index += 1) if (messages[index] !== prefix[index]) return false;
  return true;
}

interface ApplyState {
  messages: Message[];
  remembers: JsonValue[];
  forgets: string[];
}

function applyOne(state: ApplyState, mutation: Mutation): void {
  switch (mutation.type) {
    case 'ExperienceRememberMutation':
      state.remembers.push(mutation.text);
      return;
    case 'ExperienceForgetMutation':
      state.forgets.push(mutation.experience_id);
      return;
    default:
      commitExperienceBatch(state);
  }
  switch (mutation.type) {
    case 'AssistantMessageMutation':
      appendAssistantMessage(state.messages, mutation);
      return;
    case 'ToolResultMutation':
      state.messages.push({ role: 'tool', tool_call_id: mutation.tool_call_id, content: mutation.content });
      return;
    case 'MultimodalToolResultMutation':
      appendMultimodalToolResult(state.messages, mutation);
      return;
    case 'UserMessageMutation':
      state.messages.push(cloneJson(mutation.message));
      return;
    case 'ContextReplaceMutation':
      state.messages = mutation.messages.map(cloneJson);
      return;
    case 'ContextSummaryMutation':
      replaceWithSummary(state, mutation);
      return;
    case 'AssistantTruncatedMutation':
      state.messages.push({
        role: 'assistant',
        content: truncatedAssistantContent(mutation.partial_content, mutation.abort_reason ?? ''),
      });
      return;
    case 'ToolCancelledMutation':
      appendToolCancelled(state.messages, mutation);
      return;
    default:
      assertNever(mutation);
  }
}

function assertNever(value: never): never {
  throw new Error(`unhandled mutation ${JSON.stringify(value)}`);
}

function appendAssistantMessage(messages: Message[], mutation: AssistantMessageMutation): void {
  const toolCalls = mutation.tool_calls ?? [];
  const content = mutation.content ?? null;
  if (toolCalls.length > 0)
    messages.push({ role: 'assistant', content, tool_calls: cloneJson(toolCalls) as JsonValue[] });
  else if (content !== null) messages.push({ role: 'assistant', content });
}

function appendMultimodalToolResult(messages: Message[], mutation: MultimodalToolResultMutation): void {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const toolCalls = messages[index]!['tool_calls'];
    if (messages[index]!['role'] !== 'assistant' || !Array.isArray(toolCalls)) continue;
    const remaining = toolCalls.filter((call) => !hasCallId(call, mutation.tool_call_id));
    if (remaining.length === toolCalls.length) continue;
    // The message may be shared with the input transcript: it is replaced, never edited.
    const message = (messages[index] = cloneJson(messages[index]!));
    if (remaining.length > 0) {
      message['tool_calls'] = remaining;
    } else {
      delete message['tool_calls'];
      if (message['content'] === null || message['content'] === undefined) message['content'] = '';
    }
    break;
  }
  messages.push({ role: 'assistant', content: multimodalAssistantSentence(mutation.tool_name, mutation.arguments) });
  for (const userMessage of mutation.user_messages) messages.push(cloneJson(userMessage));
}

function replaceWithSummary(state: ApplyState, mutation: ContextSummaryMutation): void {
  const first = state.messages[0];
  state.messages = [...(first?.['role'] === 'system' ? [first] : []), cloneJson(mutation.summary_message)];
  for (const entry of mutation.remember ?? []) {
    if (isPlainObject(entry) && typeof entry['text'] === 'string' && trim(entry['text']) !== '') {
      state.remembers.push(entry['text']);
    }
  }
  commitExperienceBatch(state);
}

function appendToolCancelled(messages: Message[], mutation: ToolCancelledMutation): void {
  const id = mutation.tool_call_id;
  let calls = 0;
  let results = 0;
  for (const message of messages) {
    const toolCalls = message['tool_calls'];
    if (message['role'] === 'assistant' && Array.isArray(toolCalls))
      calls += toolCalls.filter((call) => hasCallId(call, id)).length;
    else if (message['role'] === 'tool' && message['tool_call_id'] === id) results += 1;
  }
  if (calls > 0 && results >= calls) return;
  if (calls === 0) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: mutation.tool_name, arguments: '{}' } }],
    });
  }
  messages.push({
    role: 'tool',
    tool_call_id: id,
    content: toolCancelledContent(mutation.tool_name, mutation.abort_reason ?? ''),
  });
}

function hasCallId(call: JsonValue, id: string): boolean {
  return isPlainObject(call) && call['id'] === id;
}

/** Commits buffered remembers and forgets (spec 3.3): forgets first, then numbered remembers, then a canonical rebuild. */
function commitExperienceBatch(state: ApplyState): void {
  if (state.remembers.length === 0 && state.forgets.length === 0) return;
  const parsed = parseSelfRefSnapshot(state.messages);
  const forgotten = new Set(state.forgets.map((id) => trim(String(id))).filter((id) => id !== ''));
  const experiences: Experience[] = parsed.experiences.filter((experience) => !forgotten.has(experience.id));
  let next = 1n;
  for (const { id } of experiences) {
    const number = id.startsWith('exp_') ? parsePythonInteger(id.slice(4)) : null;
    if (number !== null && number + 1n > next) next = number + 1n;
  }
  const known = new Set(experiences.map((experience) => experience.text));
  for (const text of state.remembers) {
    const normalized = normalizeExperienceText(text);
    if (known.has(normalized)) continue;
    known.add(normalized);
    experiences.push({ id: `exp_${next}`, text: normalized });
    next += 1n;
  }
  state.messages = buildCanonicalMessages({ ...parsed, experiences });
  state.remembers = [];
  state.forgets = [];
}
