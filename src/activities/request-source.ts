import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { createHash, type Hash } from 'node:crypto';
import { applyMutations, type Mutation } from '../context';
import { requestFields, type LlmPhaseInput, type LlmRequest } from '../runtime';
import { compiledRequestQuery, failure, FailureType } from '../common';

/** The last request read for a workflow run, with the hash state at the end of its stable prefix. */
export interface HeldRequest {
  text: string;
  stable: number;
  hashAtStable: Hash;
  /** Where its messages array starts (see RequestText); absent when its layout is unknown. */
  messagesAt?: number;
}

/** A run's key in the cache: its workflow id and run id (the activity's own workflow execution). */
export function runKey(execution: { workflowId: string; runId: string }): string {
  return `${execution.workflowId}/${execution.runId}`;
}

/** A run's last request: its text and hash state, the digest it was loaded for, and what was sent. */
interface HeldEntry {
  held: HeldRequest;
  digest: string;
  loaded: LoadedRequest;
}

/**
 * What the LLM activity keeps between calls: each run's last request, bounded in characters. A retried
 * attempt of the same call sends it again without a query; the next call reads only what follows its
 * stable prefix (or predicts it), so a long run's transfer per call is its new content, not the whole
 * transcript. One entry per run: older requests of a run are never sent again.
 */
export class RequestCache {
  private readonly held = new Map<string, HeldEntry>();
  /** Per run: what this worker's activities returned since its held request (a reply, then results). */
  private readonly since = new Map<string, Mutation[]>();
  private chars = 0;
  constructor(private readonly maxChars = 64 * 2 ** 20) {}

  /** The run's held request, if it is the one with this digest (an attempt of the same call). */
  loaded(run: string, digest: string): LoadedRequest | undefined {
    const entry = this.held.get(run);
    return entry?.digest === digest ? this.touch(run, entry).loaded : undefined;
  }

  heldFor(run: string): HeldRequest | undefined {
    const entry = this.held.get(run);
    return entry ? this.touch(run, entry).held : undefined;
  }

  /** The entry, now the run held most recently (eviction goes by least recent use). */
  private touch(run: string, entry: HeldEntry): HeldEntry {
    this.held.delete(run);
    this.held.set(run, entry);
    return entry;
  }

  hold(run: string, digest: string, held: HeldRequest, loaded: LoadedRequest): void {
    const previous = this.held.get(run);
    if (previous) this.chars -= size(previous);
    this.held.delete(run);
    const entry = { held, digest, loaded };
    this.held.set(run, entry);
    this.chars += size(entry);
    this.evict();
  }

  /** The reply this worker's LLM call returned for the run: the first thing the next request adds. */
  replied(run: string, mutations: readonly Mutation[]): void {
    if (!this.held.has(run)) return;
    this.since.delete(run);
    this.since.set(run, [...mutations]);
    this.evictSince();
  }

  /** Results this worker's tool batch returned for the run, after the reply. */
  answered(run: string, mutations: readonly Mutation[]): void {
    const since = this.since.get(run);
    if (since) since.push(...mutations);
  }

  /** What came since the held request, once: a second read means the prediction did not hold. */
  takeSince(run: string): Mutation[] | undefined {
    const since = this.since.get(run);
    this.since.delete(run);
    return since;
  }

  /** Runs that ended elsewhere leave no entry behind for long: as many as held texts, at most. */
  private evictSince(): void {
    for (const run of this.since.keys()) {
      if (this.since.size <= Math.max(this.held.size, 1)) return;
      this.since.delete(run);
    }
  }

  /** The texts held longest ago go first; a text larger than the bound stays alone. */
  private evict(): void {
    for (const [run, entry] of this.held) {
      if (this.chars <= this.maxChars || this.held.size === 1) return;
      this.chars -= size(entry);
      this.held.delete(run);
    }
  }
}

/** An entry's text, and its messages again when they had to be parsed (a request of unknown layout). */
function size(entry: HeldEntry): number {
  return entry.held.text.length + (entry.loaded.text === undefined ? entry.loaded.chars : 0);
}

/**
 * The request the workflow compiled: from the cache, or paged out of the workflow by query (queries are
 * not recorded in history, so the activity input stays a digest). The text is checked against the
 * digest the workflow answers with. That is the scheduled one, unless a newer build has compiled the
 * same LLM call differently since (a deploy mid-run): then the workflow's current request is the one
 * to send, and sending it keeps the run going.
 */
export async function loadRequest(input: LlmPhaseInput, cache: RequestCache): Promise<LoadedRequest> {
  const context = Context.current();
  if (input.request) return counted(context, 'inline', { request: input.request, chars: 0, charsRead: 0 });
  const execution = context.info.workflowExecution;
  if (!execution) throw failure(FailureType.InvalidLlmRequest, 'llmPhase must run inside a workflow');
  const run = runKey(execution);
  const cached = cache.loaded(run, input.digest);
  if (cached) return counted(context, 'cache', { ...cached, charsRead: 0 });
  const handle = context.client.workflow.getHandle(execution.workflowId, execution.runId);
  const held = cache.heldFor(run);
  // When this worker returned everything that came since the held request (a reply, then its tool
  // results), the next request is the held one plus those messages: checked against the digest, it
  // needs no query, so an evicted workflow is not replayed just to answer one.
  const since = cache.takeSince(run);
  const predicted = held && since ? predictRequest(held, since, input.digest) : null;
  if (predicted) {
    const loaded = loadedFrom(predicted, 0);
    cache.hold(run, input.digest, predicted, loaded);
    return counted(context, 'predicted', loaded);
  }
  // With the previous request's prefix, only the rest is read; a prefix that turns out wrong (the
  // transcript was rewritten: a compaction, a SelfRef change) costs one more read of the whole text.
  const partial = held ? await readRequest(handle, input, held) : null;
  const read = partial ?? (await readRequest(handle, input, undefined));
  if (!read) {
    throw failure(FailureType.StaleRequest, 'the compiled request does not match its digest', { retryable: true });
  }
  if (read.digest !== input.digest) {
    context.log.warn('a newer build compiled this LLM call differently; sending its request', {
      scheduledDigest: input.digest,
      currentDigest: read.digest,
    });
  }
  const loaded = loadedFrom(read.held, read.charsRead);
  // Held under the digest asked for: a retry of this call finds it, even when a newer build's is sent.
  cache.hold(run, input.digest, read.held, loaded);
  return counted(context, 'query', loaded);
}

/**
 * `patchloop_llm_requests{source}` in the worker's metrics: how each request was had (in the input, from
 * the cache on a retry, predicted from the last one, or by query), so the queries a deployment pays for
 * (each a replay when the run is not cached) are visible.
 */
function counted(context: Context, source: RequestSource, loaded: LoadedRequest): LoadedRequest {
  context.metricMeter
    .createCounter('patchloop_llm_requests', 'requests', 'How the LLM activity got each request it sent')
    .add(1, { source });
  return { ...loaded, source };
}

type RequestSource = 'inline' | 'cache' | 'predicted' | 'query';

/**
 * The digest proves this is the workflow's own request: no schema walk over a long transcript, and the
 * text goes to the provider as it is; only the fields around the messages are parsed.
 */
function loadedFrom(held: HeldRequest, charsRead: number): LoadedRequest {
  const { text, stable, messagesAt } = held;
  const fields = messagesAt === undefined ? null : requestFields(text, stable, messagesAt);
  return fields
    ? { request: fields as LlmRequest, text, chars: text.length, charsRead }
    : { request: JSON.parse(text) as LlmRequest, chars: text.length, charsRead };
}

/**
 * The held request with the messages these mutations append (as the workflow's commit appends them),
 * if its SHA-256 is the digest the workflow scheduled; null otherwise (anything else changed: a user
 * message, a SelfRef edit, another worker's results). The hash goes on from the held prefix's state.
 */
export function predictRequest(held: HeldRequest, since: readonly Mutation[], digest: string): HeldRequest | null {
  const { text, stable, messagesAt } = held;
  if (messagesAt === undefined || since.length === 0 || text[stable] !== ']') return null;
  let appended: string;
  try {
    appended = applyMutations([], since)
      .map((message) => JSON.stringify(message))
      .join(',');
  } catch {
    return null;
  }
  if (appended === '') return null;
  const delta = (text[stable - 1] === '[' ? '' : ',') + appended;
  const hash = held.hashAtStable.copy().update(delta, 'utf8');
  const hashAtStable = hash.copy();
  const tail = text.slice(stable);
  if (hash.update(tail, 'utf8').digest('hex') !== digest) return null;
  return { text: text.slice(0, stable) + delta + tail, stable: stable + delta.length, hashAtStable, messagesAt };
}

/**
 * A request to send: its fields, and (read from a workflow) its exact JSON text, the body to send; the
 * fields then carry no messages. `chars`: the text's length; `charsRead`: how much of it was read by
 * query this time.
 */
export interface LoadedRequest {
  request: LlmRequest;
  text?: string;
  chars: number;
  charsRead: number;
  source?: RequestSource;
}

/** The pages from `held`'s stable prefix on (or all of them), checked against the answer's digest. */
async function readRequest(
  handle: WorkflowHandle,
  input: LlmPhaseInput,
  held: HeldRequest | undefined,
): Promise<{ digest: string; held: HeldRequest; charsRead: number } | null> {
  const first = await handle.query(compiledRequestQuery, input.digest, 0, input.llm_call, held?.stable ?? 0);
  // A workflow of an older build pages from the start, whatever was asked.
  const from = held && first.from === held.stable ? held.stable : 0;
  const pages = [first.text];
  for (let page = 1; page < first.pages; page += 1) {
    const next = await handle.query(compiledRequestQuery, first.digest, page, input.llm_call, from);
    if (next.digest !== first.digest)
      throw failure(FailureType.StaleRequest, 'the compiled request changed while it was read', { retryable: true });
    pages.push(next.text);
  }
  const text = (from > 0 ? held!.text.slice(0, from) : '') + pages.join('');
  // Node's native SHA-256 gives the same digest as the workflow's pure-JS one; it continues from the
  // held prefix's state, so only the new part is hashed.
  const stable =
    first.stable !== undefined && first.stable >= from && first.stable <= text.length ? first.stable : from;
  const hash = from > 0 ? held!.hashAtStable.copy() : createHash('sha256');
  hash.update(text.slice(from, stable), 'utf8');
  const hashAtStable = hash.copy();
  const digest = hash.update(text.slice(stable), 'utf8').digest('hex');
  if (digest !== first.digest) return null;
  return {
    digest,
    held: {
      text,
      stable,
      hashAtStable,
      ...(first.messages_at !== undefined && first.stable === stable ? { messagesAt: first.messages_at } : {}),
    },
    charsRead: text.length - from,
  };
}
