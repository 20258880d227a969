import { createHash } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { digestText } from '../../src/runtime';
import type { RunEndedSummary } from '../../src/common';
import { workflowBundle } from '../support/temporal';

/**
 * Histories recorded from the e2e scenarios (RECORD_HISTORIES=1) must replay with today's workflow
 * code: same commands, and the same final transcript (checked through a sink called during replay).
 */

interface HistoryEvent {
  eventType: string;
  activityTaskScheduledEventAttributes?: { activityType: { name: string } };
  workflowExecutionCompletedEventAttributes?: { result: { payloads: Array<{ data: string }> } };
  workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string };
}

const folder = join(__dirname, '..', 'histories');
const workflowIds = JSON.parse(readFileSync(join(folder, 'workflow-ids.json'), 'utf8')) as Record<string, string>;
const manifest = JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as Record<string, string>;
const recorded = readdirSync(folder)
  .filter((name) => name.endsWith('.json') && name !== 'workflow-ids.json' && name !== 'manifest.json')
  .sort()
  .map((name) => {
    const scenario = name.replace(/\.json$/, '');
    return {
      scenario,
      workflowId: workflowIds[scenario] ?? scenario,
      history: JSON.parse(readFileSync(join(folder, name), 'utf8')) as { events: HistoryEvent[] },
    };
  });

/**
 * The digest of the result the original run returned, as recorded in its completion event; undefined
 * for a run that continued as new (it returned nothing, and reports no result to the sink either).
 */
function recordedResultDigest(history: { events: HistoryEvent[] }): string | undefined {
  const completed = history.events.find((event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
  if (!completed) return undefined;
  const payload = completed!.workflowExecutionCompletedEventAttributes!.result.payloads[0]!.data;
  return digestText(JSON.stringify(JSON.parse(Buffer.from(payload, 'base64').toString('utf8'))));
}

function runKey(workflowId: string, continuedFrom: string | undefined): string {
  return `${workflowId}/${continuedFrom ?? ''}`;
}

describe('replay of recorded histories', () => {
  it('keeps every history as it was recorded: the corpus is a compatibility gate, never re-recorded', () => {
    const sha256 = (name: string) =>
      createHash('sha256')
        .update(readFileSync(join(folder, `${name}.json`)))
        .digest('hex');
    for (const { scenario } of recorded) expect([scenario, manifest[scenario]]).toEqual([scenario, sha256(scenario)]);
    // A history the manifest lists may not disappear either.
    expect(Object.keys(manifest).sort()).toEqual(recorded.map((item) => item.scenario).sort());
  });

  it('covers the scenarios of the runtime tests', () => {
    expect(recorded.map((item) => item.scenario)).toEqual(
      expect.arrayContaining([
        'abort-during-batch',
        'abort-while-streaming',
        'agent-resolved-locally',
        'crash-during-batch',
        'crash-during-llm',
        'malformed-arguments',
        'parallel-batch',
        'rate-limit-retry',
        'tool-happy-path',
        'user-message',
        'selfref-remember-forget',
        'selfref-compact',
        'selfref-fork',
        'session-basic',
        'session-abort',
        'llm-function-repair',
        'stream-incomplete-retry',
        'budget-last-call-message',
        'abort-unprocessed-message',
        'user-message-update',
        'session-failed-turn',
        'handoff-and-back',
        'handoff-continues-as-new',
        'subagent-delegation',
        'subagent-parent-continued-as-new',
        'subagent-parent-continues-as-new',
        'subagent-failure-charged',
        'subagent-reattached-child-visible',
        'run-end-notify',
      ]),
    );
  });

  it('replays every history without a determinism error and computes the same result', async () => {
    const summaries = new Map<string, RunEndedSummary>();
    const replay = Worker.runReplayHistories(
      {
        workflowBundle: await workflowBundle(),
        sinks: {
          patchloop: {
            runEnded: {
              // Two runs of one chain share a workflow id: the run they continue from tells them apart.
              fn: (info, summary: RunEndedSummary) =>
                void summaries.set(runKey(info.workflowId, info.continuedFromExecutionRunId), summary),
              callDuringReplay: true,
            },
            abortRequested: { fn: () => undefined },
          },
        },
      },
      recorded.map(({ workflowId, history }) => ({ workflowId, history })),
    );
    const failures: string[] = [];
    for await (const result of replay) if (result.error) failures.push(`${result.workflowId}: ${String(result.error)}`);
    expect(failures).toEqual([]);
    for (const { scenario, workflowId, history } of recorded) {
      const started = history.events[0]?.workflowExecutionStartedEventAttributes;
      const summary = summaries.get(runKey(workflowId, started?.continuedExecutionRunId || undefined));
      expect(summary && digestText(JSON.stringify(summary.result)), scenario).toBe(recordedResultDigest(history));
    }
  });

  it('fails with a determinism error when the recorded commands no longer match the code', async () => {
    const original = recorded.find((item) => item.scenario === 'tool-happy-path')!;
    const edited = structuredClone(original.history);
    const scheduled = edited.events.filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
    scheduled[1]!.activityTaskScheduledEventAttributes!.activityType.name = 'toolBatch';
    const replay = Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, [
      { workflowId: 'edited', history: edited },
    ]);
    const results = [];
    for await (const result of replay) results.push(result);
    expect(results).toHaveLength(1);
    expect(results[0]!.error?.name).toBe('DeterminismViolationError');
    expect(String(results[0]!.error)).toMatch(/Nondeterminism|TMPRL1100/);
  });
});
