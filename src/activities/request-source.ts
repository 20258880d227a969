import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { createHash, type Hash } from 'node:crypto';
import { requestFields, type LlmPhaseInput, type LlmRequest } from '../runtime';
import { compiledRequestQuery } from '../common';

/** The last request read for a workflow run, with the hash state at the end of its stable prefix. */
interface HeldRequest {
  text: string;
  stable: number;
  hashAtStable: Hash;
}

/**
 * What the LLM activity keeps between calls, bounded in characters: parsed requests by digest (a retried
 * attempt skips the query) and each run's last request text (the next call reads only what follows its
 * stable prefix, so a long run's transfer per call is its new content, not the whole transcript).
 */
export class RequestCache {
  private readonly parsed = new Map<string, { request: LoadedRequest; chars: number }>();
  private readonly held = new Map<string, HeldRequest>();
  private chars = 0;
  constructor(private readonly maxChars = 64 * 2 ** 20) {}

  get(digest: string): LoadedRequest | undefined {
    const hit = this.parsed.get(digest);
    if (!hit) return undefined;
    this.parsed.delete(digest);
    this.parsed.set(digest, hit);
    return hit.request;
  }

  set(digest: string, request: LoadedRequest, chars: number): void {
    this.dropParsed(digest);
    this.parsed.set(digest, { request, chars });
    this.chars += chars;
    this.evict();
  }

  heldFor(run: string): HeldRequest | undefined {
    const hit = this.held.get(run);
    if (!hit) return undefined;
    this.held.delete(run);
    this.held.set(run, hit);
    return hit;
  }

  hold(run: string, request: HeldRequest): void {
    const previous = this.held.get(run);
    if (previous) this.chars -= previous.text.length;
    this.held.delete(run);
    this.held.set(run, request);
    this.chars += request.text.length;
    this.evict();
  }

  private dropParsed(digest: string): void {
    const entry = this.parsed.get(digest);
    if (entry) this.chars -= entry.chars;
    this.parsed.delete(digest);
  }

  /** Parsed requests go first (a retry can read its own again), then the texts held longest ago. */
  private evict(): void {
    for (const digest of this.parsed.keys()) {
      if (this.chars <= this.maxChars) return;
      this.dropParsed(digest);
    }
    for (const [run, held] of this.held) {
      if (this.chars <= this.maxChars || this.held.size === 1) return;
      this.chars -= held.text.length;
      this.held.delete(run);
    }
  }
}

/**
 * The request the workflow compiled: from the cache, or paged out of the workflow by query (queries are
 * not recorded in history, so the activity input stays a digest). The text is checked against the
 * digest the workflow answers with. That is the scheduled one, unless a newer build has compiled the
 * same LLM call differently since (a deploy mid-run): then the workflow's current request is the one
 * to send, and sending it keeps the run going.
 */
export async function loadRequest(input: LlmPhaseInput, cache: RequestCache): Promise<LoadedRequest> {
  if (input.request) return { request: input.request, chars: 0, charsRead: 0 };
  const cached = cache.get(input.digest);
  if (cached) return { ...cached, charsRead: 0 };
  const context = Context.current();
  const execution = context.info.workflowExecution;
  if (!execution) throw ApplicationFailure.nonRetryable('llmPhase must run inside a workflow', 'InvalidLlmRequest');
  const handle = context.client.workflow.getHandle(execution.workflowId, execution.runId);
  const run = `${execution.workflowId}/${execution.runId}`;
  const held = cache.heldFor(run);
  // With the previous request's prefix, only the rest is read; a prefix that turns out wrong (the
  // transcript was rewritten: a compaction, a SelfRef change) costs one more read of the whole text.
  const partial = held ? await readRequest(handle, input, held) : null;
  const read = partial ?? (await readRequest(handle, input, undefined));
  if (!read) {
    throw ApplicationFailure.create({
      type: 'StaleRequest',
      message: 'the compiled request does not match its digest',
    });
  }
  if (read.digest !== input.digest) {
    context.log.warn('a newer build compiled this LLM call differently; sending its request', {
      scheduledDigest: input.digest,
      currentDigest: read.digest,
    });
  }
  const { text, stable } = read.held;
  cache.hold(run, read.held);
  // The digest proves this is the workflow's own request: no schema walk over a long transcript, and
  // the text goes to the provider as it is; only the fields around the messages are parsed.
  const fields = read.messagesAt === undefined ? null : requestFields(text, stable, read.messagesAt);
  const loaded: LoadedRequest = fields
    ? { request: fields as LlmRequest, text, chars: text.length, charsRead: read.charsRead }
    : { request: JSON.parse(text) as LlmRequest, chars: text.length, charsRead: read.charsRead };
  cache.set(input.digest, loaded, text.length);
  return loaded;
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
}

/** The pages from `held`'s stable prefix on (or all of them), checked against the answer's digest. */
async function readRequest(
  handle: WorkflowHandle,
  input: LlmPhaseInput,
  held: HeldRequest | undefined,
): Promise<{ digest: string; held: HeldRequest; charsRead: number; messagesAt?: number } | null> {
  const first = await handle.query(compiledRequestQuery, input.digest, 0, input.llm_call, held?.stable ?? 0);
  // A workflow of an older build pages from the start, whatever was asked.
  const from = held && first.from === held.stable ? held.stable : 0;
  const pages = [first.text];
  for (let page = 1; page < first.pages; page += 1) {
    const next = await handle.query(compiledRequestQuery, first.digest, page, input.llm_call, from);
    if (next.digest !== first.digest)
      throw ApplicationFailure.create({
        type: 'StaleRequest',
        message: 'the compiled request changed while it was read',
      });
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
    held: { text, stable, hashAtStable },
    charsRead: text.length - from,
    ...(first.messages_at !== undefined && first.stable === stable ? { messagesAt: first.messages_at } : {}),
  };
}
