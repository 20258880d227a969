import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import type { Responder } from '../../src/fake-model/server';
import { DEFAULT_BUDGET_LIMITS } from '../../src/runtime';
import { repositoryRoot, testVenv } from '../../support/repository';
import { temporalAddress } from '../support/temporal';
import { eventually } from '../support/wait';
import { curl, runCommand } from '../support/http-api';

/** Answers with every user message it has heard; the first answer comes slowly, so a signal lands first. */
const listener: Responder = (body, index) => {
  const heard = body.messages.filter((message) => message['role'] === 'user').map((message) => message['content']);
  // 'take your time' waits to be aborted.
  const delay = heard.includes('take your time') ? 60_000 : index === 0 ? 1500 : 0;
  return { kind: 'reply', content: `heard: ${heard.join(' | ')}`, firstChunkDelayMs: delay };
};

/** The long-poll loop for a result: wait for the close event, then read its result. */
async function closeEvent(workflowId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const page = await curl(
      'GET',
      `/workflows/${workflowId}/history?waitNewEvent=true&historyEventFilterType=HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT`,
    );
    const events = (page['history'] as { events?: Array<Record<string, unknown>> } | undefined)?.events ?? [];
    if (events.length > 0) return events[0]!;
  }
}

describe('any service, any language', () => {
  it('curl and the HTTP API: start (with an empty history), signal, query, long-poll the result, abort', async ({
    startWorld,
  }) => {
    const world = await startWorld({ fake: { responder: listener } });
    const id = `http-${randomUUID()}`;
    await curl('POST', `/workflows/${id}`, {
      workflowType: { name: 'agentRun' },
      taskQueue: { name: world.config.taskQueue },
      // The shorthand turns [] into null: the run takes null as "no history".
      input: [{ agent: 'assistant', input: 'What is 2 + 3?', history: [] }],
    });
    await curl('POST', `/workflows/${id}/signal/user_message`, { input: [{ content: 'and also hello' }] });
    const status = await curl('POST', `/workflows/${id}/query/status`, { query: {} });
    expect((status['queryResult'] as Array<{ state: string }>)[0]!.state).toBe('running');
    const closed = await closeEvent(id);
    const attributes = closed['workflowExecutionCompletedEventAttributes'] as { result: Array<{ answer: string }> };
    expect(attributes.result[0]!.answer).toBe('heard: What is 2 + 3? | and also hello');

    // An aborted run completes too: its result says "aborted".
    const aborted = `http-${randomUUID()}`;
    await curl('POST', `/workflows/${aborted}`, {
      workflowType: { name: 'agentRun' },
      taskQueue: { name: world.config.taskQueue },
      input: [{ agent: 'assistant', input: 'take your time', budget: { max_llm_calls: 5 } }],
    });
    // Once the run has opened with its budget, an update as the README shows it: extend_budget answers the new limits.
    await eventually(async () => {
      const page = await curl('POST', `/workflows/${aborted}/query/status`, { query: {} });
      return (page['queryResult'] as Array<{ budget: unknown }>)[0]!.budget ? true : undefined;
    });
    const updated = await curl('POST', `/workflows/${aborted}/update/extend_budget`, {
      request: { meta: { updateId: `extend-${aborted}` }, input: { args: [{ llm_calls: 20 }] } },
      waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
    });
    expect(JSON.stringify(updated)).toContain('"max_llm_calls":25');
    // An update the run's validator refuses: its reason, final (sending it again cannot help), and none of
    // the worker's stack or source paths.
    const refused = await curl('POST', `/workflows/${aborted}/update/extend_budget`, {
      request: { meta: { updateId: `refused-${aborted}` }, input: { args: [{}] } },
      waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
    });
    const refusal = (refused['outcome'] as { failure: Record<string, unknown> }).failure;
    expect(refusal).toMatchObject({
      message: expect.stringContaining('not a budget extension: name at least one of tokens'),
      applicationFailureInfo: { type: 'UpdateRefused', nonRetryable: true },
    });
    expect(refusal['stackTrace'] ?? '').toBe('');
    expect(JSON.stringify(refused)).not.toMatch(/src\/workflows|\.ts:\d|node_modules/);
    await curl('POST', `/workflows/${aborted}/signal/abort`, { input: [{ reason: 'from curl' }] });
    const end = await closeEvent(aborted);
    const result = (end['workflowExecutionCompletedEventAttributes'] as { result: Array<Record<string, unknown>> })
      .result[0]!;
    expect(result).toMatchObject({ status: 'aborted', abort_reason: 'from curl' });
  });

  it("Temporal's Python SDK: start, signal, query and the result", async ({ startWorld }) => {
    const world = await startWorld({ fake: { responder: listener } });
    const python = join(testVenv, 'bin', 'python');
    const out = await runCommand(python, [
      join(repositoryRoot, 'test', 'any-language', 'python_client.py'),
      temporalAddress(),
      world.config.taskQueue,
      `python-${randomUUID()}`,
    ]);
    expect(out.code, out.stderr).toBe(0);
    const printed = JSON.parse(out.stdout) as {
      status: { state: string; agent: string };
      limits: Record<string, number | null>;
      result: Record<string, unknown>;
    };
    expect(printed.status).toEqual({ state: 'running', agent: 'assistant' });
    // The default bounds, the token bound raised by the 50,000 tokens the client's extend_budget added.
    expect(printed.limits).toMatchObject({
      max_llm_calls: DEFAULT_BUDGET_LIMITS.max_llm_calls,
      max_total_tokens: DEFAULT_BUDGET_LIMITS.max_total_tokens + 50_000,
    });
    expect(printed.result).toMatchObject({ status: 'completed', answer: 'heard: What is 2 + 3? | and also hello' });
  });
});
