import type { ChatRequestBody } from './server';
import type { FakeStep, FakeToolCall } from './steps';

/**
 * A model script: what a test's model does for one kind of conversation, step by step. Step N answers
 * the request that carries N - 1 replies of the model, so the cursor is the conversation itself: a
 * script is a value any number of runs (and retries of a request) can use at once, each from its
 * start. `ScriptPlayer` plays scripts; `ScriptedModel` serves them over HTTP.
 */
export interface ModelScript {
  /** Named in every message about it. */
  readonly name: string;
  /** Which conversations it plays, when a model has several scripts (a sub-agent's, say). */
  readonly when?: ConversationMatch;
  readonly steps: readonly ScriptStep[];
}

/** Text a step expects: exactly this string, containing or matching something, or passing a test (code only). */
export type TextMatch = string | RegExp | { contains: string } | { matches: string; flags?: string } | TextTest;
export type TextTest = (text: string) => boolean;

export interface ConversationMatch {
  /** The conversation's first user message. */
  user?: TextMatch;
  /** Its system prompt (the agent's instructions are in it). */
  system?: TextMatch;
}

/** One reply of the model, and what the request for it must show. */
export interface ScriptStep {
  /** Named in messages (default: its number). */
  name?: string;
  expect?: StepExpectation;
  /** Call these tools (arguments as an object, or raw text that may be malformed on purpose). */
  callTools?: ScriptedCall[];
  /** Answer this text (with `callTools`: said before the calls). */
  answer?: string;
}

export interface ScriptedCall {
  name: string;
  arguments?: Record<string, unknown> | string;
  /** Default `call_<reply>_<n>`. */
  id?: string;
}

export interface StepExpectation {
  /** The latest user message of the request. */
  user?: TextMatch;
  /** The tool results the model receives since its last reply, all of them, in order. */
  toolResults?: Array<{ name?: string; content?: TextMatch }>;
  /** Tools the request must offer (others may be offered too). */
  tools?: string[];
  /** Any other check (code only): false, a message or a throw fails the step. */
  check?: (request: ScriptedRequest) => boolean | string | void;
}

/** A request as a script sees it, in either wire format. */
export interface ScriptedRequest {
  /** The reply it asks for: 1 for the conversation's first. */
  reply: number;
  api: 'chat_completions' | 'responses';
  system: string | undefined;
  firstUserMessage: string | undefined;
  lastUserMessage: string | undefined;
  toolResults: Array<{ id: string; name: string; content: string }>;
  tools: string[];
  body: ChatRequestBody;
}

/** A script from its steps; checked now, so a mistake in it fails where it is written. */
export function modelScript(
  steps: ScriptStep[],
  options: { name?: string; when?: ConversationMatch } = {},
): ModelScript {
  return checkedScript({ ...options, steps }, options.name ?? 'script');
}

/**
 * Scripts from data (a JSON file, a module's export): an array of steps, a script object
 * (`{name, when, steps}`), or an array or `{scripts: [...]}` of script objects.
 */
export function modelScriptsFrom(value: unknown, source: string): ModelScript[] {
  const list = isRecord(value) && Array.isArray(value['scripts']) ? value['scripts'] : value;
  if (Array.isArray(list) && list.length > 0 && list.every((item) => isRecord(item) && 'steps' in item))
    return list.map((item, index) => checkedScript(item, `${source} script ${index + 1}`));
  if (Array.isArray(list)) return [checkedScript({ steps: list }, source)];
  if (isRecord(list) && 'steps' in list) return [checkedScript(list, source)];
  throw new TypeError(
    `${source}: a model script is an array of steps, an object {name, when, steps}, or a list of those`,
  );
}

const STEP_KEYS = ['name', 'expect', 'callTools', 'answer'];
const EXPECT_KEYS = ['user', 'toolResults', 'tools', 'check'];

function checkedScript(value: unknown, label: string): ModelScript {
  if (!isRecord(value)) throw new TypeError(`${label}: a script must be an object with steps`);
  unknownKeys(value, ['name', 'when', 'steps'], label);
  const name = value['name'] === undefined ? label : value['name'];
  if (typeof name !== 'string' || name === '') throw new TypeError(`${label}: name must be a non-empty string`);
  const steps = value['steps'];
  if (!Array.isArray(steps) || steps.length === 0)
    throw new TypeError(`script '${name}': steps must be a non-empty array`);
  const when = value['when'];
  if (when !== undefined) {
    if (!isRecord(when)) throw new TypeError(`script '${name}': when must be an object {user, system}`);
    unknownKeys(when, ['user', 'system'], `script '${name}' when`);
    for (const key of ['user', 'system']) checkMatch(when[key], `script '${name}' when.${key}`);
  }
  const checked = steps.map((step, index) => checkedStep(step, `script '${name}' step ${index + 1}`));
  return Object.freeze({
    name,
    ...(when !== undefined ? { when: when as ConversationMatch } : {}),
    steps: Object.freeze(checked),
  });
}

function checkedStep(step: unknown, label: string): ScriptStep {
  if (!isRecord(step)) throw new TypeError(`${label}: a step must be an object`);
  unknownKeys(step, STEP_KEYS, label);
  if (step['name'] !== undefined && typeof step['name'] !== 'string')
    throw new TypeError(`${label}: name must be a string`);
  const answer = step['answer'];
  const calls = step['callTools'];
  if (answer === undefined && calls === undefined) throw new TypeError(`${label}: a step needs answer or callTools`);
  if (answer !== undefined && typeof answer !== 'string') throw new TypeError(`${label}: answer must be a string`);
  if (calls !== undefined) {
    if (!Array.isArray(calls) || calls.length === 0)
      throw new TypeError(`${label}: callTools must be a non-empty array of {name, arguments}`);
    for (const [index, call] of calls.entries()) {
      const where = `${label} callTools[${index}]`;
      if (!isRecord(call)) throw new TypeError(`${where}: a call must be an object {name, arguments}`);
      unknownKeys(call, ['name', 'arguments', 'id'], where);
      if (typeof call['name'] !== 'string' || call['name'] === '')
        throw new TypeError(`${where}: name must be a tool name`);
      const args = call['arguments'];
      if (args !== undefined && typeof args !== 'string' && !isRecord(args))
        throw new TypeError(`${where}: arguments must be an object (or raw JSON text)`);
      if (call['id'] !== undefined && typeof call['id'] !== 'string')
        throw new TypeError(`${where}: id must be a string`);
    }
  }
  const expect = step['expect'];
  if (expect !== undefined) {
    if (!isRecord(expect)) throw new TypeError(`${label}: expect must be an object`);
    unknownKeys(expect, EXPECT_KEYS, `${label} expect`);
    checkMatch(expect['user'], `${label} expect.user`);
    const results = expect['toolResults'];
    if (results !== undefined) {
      if (!Array.isArray(results)) throw new TypeError(`${label}: expect.toolResults must be an array`);
      for (const [index, result] of results.entries()) {
        const where = `${label} expect.toolResults[${index}]`;
        if (!isRecord(result)) throw new TypeError(`${where}: must be an object {name, content}`);
        unknownKeys(result, ['name', 'content'], where);
        if (result['name'] !== undefined && typeof result['name'] !== 'string')
          throw new TypeError(`${where}: name must be a string`);
        checkMatch(result['content'], `${where}.content`);
      }
    }
    const tools = expect['tools'];
    if (tools !== undefined && !(Array.isArray(tools) && tools.every((tool) => typeof tool === 'string')))
      throw new TypeError(`${label}: expect.tools must be an array of tool names`);
    if (expect['check'] !== undefined && typeof expect['check'] !== 'function')
      throw new TypeError(`${label}: expect.check must be a function`);
  }
  return step as ScriptStep;
}

function checkMatch(match: unknown, label: string): void {
  if (match === undefined || typeof match === 'string' || match instanceof RegExp || typeof match === 'function')
    return;
  if (isRecord(match) && Object.keys(match).length === 1 && typeof match['contains'] === 'string') return;
  if (isRecord(match) && typeof match['matches'] === 'string') {
    unknownKeys(match, ['matches', 'flags'], label);
    try {
      new RegExp(match['matches'], typeof match['flags'] === 'string' ? match['flags'] : undefined);
      return;
    } catch (error) {
      throw new TypeError(`${label}: ${(error as Error).message}`);
    }
  }
  throw new TypeError(`${label}: expected a string, {"contains": "..."} or {"matches": "regular expression"}`);
}

function unknownKeys(value: Record<string, unknown>, known: string[], label: string): void {
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length > 0)
    throw new TypeError(
      `${label}: unknown ${unknown.map((key) => `'${key}'`).join(', ')} (known: ${known.join(', ')})`,
    );
}

export function textMatches(match: TextMatch, text: string | undefined): boolean {
  if (text === undefined) return false;
  if (typeof match === 'string') return text === match;
  if (match instanceof RegExp) return new RegExp(match.source, match.flags.replace('g', '')).test(text);
  if (typeof match === 'function') return match(text);
  if ('contains' in match) return text.includes(match.contains);
  return new RegExp(match.matches, match.flags).test(text);
}

export function describeMatch(match: TextMatch): string {
  if (typeof match === 'string') return quote(match);
  if (match instanceof RegExp) return `matching ${String(match)}`;
  if (typeof match === 'function') return `passing ${match.name || 'a test'}`;
  if ('contains' in match) return `containing ${quote(match.contains)}`;
  return `matching /${match.matches}/${match.flags ?? ''}`;
}

/** A text in a message: quoted, and cut when long. */
export function quote(text: string | undefined): string {
  if (text === undefined) return '(none)';
  const short = text.length > 160 ? `${text.slice(0, 160)}…` : text;
  return JSON.stringify(short);
}

/** The request's conversation in one form for both wire formats. */
interface Entry {
  role: 'system' | 'user' | 'assistant' | 'tool';
  text: string;
  calls: Array<{ id: string; name: string }>;
  callId?: string;
}

export function readRequest(body: ChatRequestBody): { request: ScriptedRequest; opening: string } {
  const responses = Array.isArray(body['input']);
  const entries = responses ? responsesEntries(body['input'] as unknown[]) : chatEntries(body.messages ?? []);
  const replies = entries.filter((entry) => entry.role === 'assistant');
  const last = replies.at(-1);
  const afterLast = last ? entries.slice(entries.lastIndexOf(last) + 1) : [];
  const names = new Map((last?.calls ?? []).map((call) => [call.id, call.name]));
  const users = entries.filter((entry) => entry.role === 'user');
  const system = entries.find((entry) => entry.role === 'system');
  const firstUser = users[0];
  const request: ScriptedRequest = {
    reply: replies.length + 1,
    api: responses ? 'responses' : 'chat_completions',
    system: system?.text,
    firstUserMessage: firstUser?.text,
    lastUserMessage: users.at(-1)?.text,
    toolResults: afterLast
      .filter((entry) => entry.role === 'tool')
      .map((entry) => ({
        id: entry.callId ?? '',
        name: names.get(entry.callId ?? '') ?? '(unknown call)',
        content: entry.text,
      })),
    tools: (body.tools ?? []).map(toolName).filter((name): name is string => name !== undefined),
    body,
  };
  // What a conversation is known by: its messages up to its first user message.
  const opening = JSON.stringify(entries.slice(0, firstUser ? entries.indexOf(firstUser) + 1 : 0));
  return { request, opening };
}

function chatEntries(messages: Array<Record<string, unknown>>): Entry[] {
  return messages.map((message) => {
    const role = message['role'] === 'developer' ? 'system' : (message['role'] as Entry['role']);
    const calls = Array.isArray(message['tool_calls']) ? (message['tool_calls'] as unknown[]) : [];
    return {
      role,
      text: contentText(message['content']),
      calls: calls.filter(isRecord).map((call) => ({
        id: String(call['id'] ?? ''),
        name: String(isRecord(call['function']) ? call['function']['name'] : ''),
      })),
      ...(role === 'tool' ? { callId: String(message['tool_call_id'] ?? '') } : {}),
    };
  });
}

/** Responses API items: a reply is its run of assistant items (reasoning, text, function calls). */
function responsesEntries(items: unknown[]): Entry[] {
  const entries: Entry[] = [];
  for (const item of items.filter(isRecord)) {
    const type = item['type'];
    const previous = entries.at(-1);
    const reply = () => {
      if (previous?.role === 'assistant') return previous;
      const entry: Entry = { role: 'assistant', text: '', calls: [] };
      entries.push(entry);
      return entry;
    };
    if (type === 'function_call') reply().calls.push({ id: String(item['call_id']), name: String(item['name']) });
    else if (type === 'function_call_output')
      entries.push({ role: 'tool', text: contentText(item['output']), calls: [], callId: String(item['call_id']) });
    else if (type === 'reasoning') reply();
    else if (item['role'] === 'assistant') reply().text += contentText(item['content']);
    else if (item['role'] === 'user' || item['role'] === 'system' || item['role'] === 'developer')
      entries.push({
        role: item['role'] === 'user' ? 'user' : 'system',
        text: contentText(item['content']),
        calls: [],
      });
  }
  return entries;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      isRecord(part) && typeof part['text'] === 'string' ? part['text'] : isRecord(part) ? '[image]' : '',
    )
    .join('');
}

function toolName(tool: Record<string, unknown>): string | undefined {
  const fn = tool['function'];
  if (isRecord(fn) && typeof fn['name'] === 'string') return fn['name'];
  return typeof tool['name'] === 'string' ? tool['name'] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why a request does not fit its step (empty: it fits). */
export function mismatches(step: ScriptStep, request: ScriptedRequest): string[] {
  const found: string[] = [];
  const expect = step.expect ?? {};
  if (expect.user !== undefined && !textMatches(expect.user, request.lastUserMessage))
    found.push(`expected the latest user message ${describeMatch(expect.user)}, got ${quote(request.lastUserMessage)}`);
  if (expect.toolResults !== undefined) {
    const expected = expect.toolResults;
    const got = request.toolResults;
    const fits =
      expected.length === got.length &&
      expected.every(
        (want, index) =>
          (want.name === undefined || want.name === got[index]!.name) &&
          (want.content === undefined || textMatches(want.content, got[index]!.content)),
      );
    if (!fits)
      found.push(
        `expected the tool results [${expected
          .map(
            (want) =>
              `${want.name ?? 'any tool'}: ${want.content === undefined ? 'anything' : describeMatch(want.content)}`,
          )
          .join('; ')}], got [${got.map((result) => `${result.name}: ${quote(result.content)}`).join('; ')}]`,
      );
  }
  const missing = (expect.tools ?? []).filter((tool) => !request.tools.includes(tool));
  if (missing.length > 0)
    found.push(`expected the tools ${missing.join(', ')} to be offered, got [${request.tools.join(', ')}]`);
  const unoffered = (step.callTools ?? []).map((call) => call.name).filter((tool) => !request.tools.includes(tool));
  if (unoffered.length > 0)
    found.push(
      `calls ${unoffered.join(', ')}, which the request does not offer (offered: [${request.tools.join(', ')}])`,
    );
  if (expect.check) {
    try {
      const verdict = expect.check(request);
      if (verdict === false)
        found.push(expect.check.name ? `its check ${expect.check.name} failed` : 'its check failed');
      else if (typeof verdict === 'string') found.push(verdict);
    } catch (error) {
      found.push(`its check threw: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return found;
}

/** The model's reply for a step: its text in word chunks (streamed as a provider would), then its calls. */
export function stepReply(step: ScriptStep, reply: number): FakeStep {
  const toolCalls: FakeToolCall[] = (step.callTools ?? []).map((call, index) => ({
    id: call.id ?? `call_${reply}_${index + 1}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
  }));
  return {
    kind: 'reply',
    ...(step.answer !== undefined ? { content: step.answer.split(/(?<= )/) } : {}),
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
  };
}
