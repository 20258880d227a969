import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import type { LlmPhaseInput, LlmRequest } from '../runtime';
import { compiledRequestQuery } from '../common';

/** A small LRU of compiled requests by digest: a retried attempt on the same worker skips the query. */
export class RequestCache {
  private readonly entries = new Map<string, LlmRequest>();
  constructor(private readonly capacity = 16) {}

  get(digest: string): LlmRequest | undefined {
    const hit = this.entries.get(digest);
    if (hit) {
      this.entries.delete(digest);
      this.entries.set(digest, hit);
    }
    return hit;
  }

  set(digest: string, request: LlmRequest): void {
    this.entries.delete(digest);
    this.entries.set(digest, request);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * The request the workflow compiled: from the cache, or paged out of the workflow by query (queries are
 * not recorded in history, so the activity input stays a digest). The text is checked against the
 * digest the workflow answers with. That is the scheduled one, unless a newer build has compiled the
 * same LLM call differently since (a deploy mid-run): then the workflow's current request is the one
 * to send, and sending it keeps the run going.
 */
export async function loadRequest(input: LlmPhaseInput, cache: RequestCache): Promise<LlmRequest> {
  if (input.request) return input.request;
  const cached = cache.get(input.digest);
  if (cached) return cached;
  const context = Context.current();
  const execution = context.info.workflowExecution;
  if (!execution) throw ApplicationFailure.nonRetryable('llmPhase must run inside a workflow', 'InvalidLlmRequest');
  const handle = context.client.workflow.getHandle(execution.workflowId, execution.runId);
  const first = await handle.query(compiledRequestQuery, input.digest, 0, input.llm_call);
  const pages = [first.text];
  for (let page = 1; page < first.pages; page += 1) {
    const next = await handle.query(compiledRequestQuery, first.digest, page, input.llm_call);
    if (next.digest !== first.digest)
      throw ApplicationFailure.create({
        type: 'StaleRequest',
        message: 'the compiled request changed while it was read',
      });
    pages.push(next.text);
  }
  const text = pages.join('');
  // Node's native SHA-256 gives the same digest as the workflow's pure-JS one, much faster.
  if (createHash('sha256').update(text, 'utf8').digest('hex') !== first.digest) {
    throw ApplicationFailure.create({
      type: 'StaleRequest',
      message: 'the compiled request does not match its digest',
    });
  }
  if (first.digest !== input.digest) {
    Context.current().log.warn('a newer build compiled this LLM call differently; sending its request', {
      scheduledDigest: input.digest,
      currentDigest: first.digest,
    });
  }
  // The digest proves this is the workflow's own request: no schema walk over a long transcript.
  const request = JSON.parse(text) as LlmRequest;
  cache.set(input.digest, request);
  return request;
}
