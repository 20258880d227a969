import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { createActivities } from '../../src/activities';
import { AgentRegistry } from '../../src/agents/registry';
import * as definitions from '../../src/common/definitions';
import {
  ApprovalDecision,
  BudgetExtension,
  ChildApprovals,
  LlmFunctionInput,
  LlmPhaseInput,
  NotifierInput,
  NotifyDeliveryInput,
  ToolBatchInput,
  ToolReviewInput,
} from '../../src/runtime';
import * as workflows from '../../src/workflows';
import { parseRunInput } from '../../src/workflows/agent-run';
import { parseSessionInput } from '../../src/workflows/chat-session';

/**
 * Names and inputs are contracts with runs in flight: a deploy that drops a workflow, activity, signal,
 * update or query that a running run (or a client of it) uses, or an input field recorded runs send,
 * strands those runs. This gate reads every recorded history (test/histories) and the list of names
 * the project publishes (test/fixtures/contract-names.json), and fails when today's code lost one.
 */

interface Payload {
  metadata?: { encoding?: string };
  data?: string;
}
interface Event {
  eventType: string;
  workflowExecutionStartedEventAttributes?: { workflowType: { name: string }; input?: { payloads?: Payload[] } };
  activityTaskScheduledEventAttributes?: { activityType: { name: string }; input?: { payloads?: Payload[] } };
  workflowExecutionSignaledEventAttributes?: { signalName: string; input?: { payloads?: Payload[] } };
  workflowExecutionUpdateAcceptedEventAttributes?: {
    acceptedRequest: { input: { name: string; args?: { payloads?: Payload[] } } };
  };
}

const folder = join(__dirname, '..', 'histories');
const histories = readdirSync(folder)
  .filter((name) => name.endsWith('.json') && name !== 'workflow-ids.json' && name !== 'manifest.json')
  .map((name) => ({
    scenario: name.replace(/\.json$/, ''),
    events: (JSON.parse(readFileSync(join(folder, name), 'utf8')) as { events: Event[] }).events,
  }));

/** A payload's value when it is plain JSON in the history (not by reference, not encrypted). */
function valueOf(payload: Payload | undefined): { value: unknown } | undefined {
  if (!payload?.data || Buffer.from(payload.metadata?.encoding ?? '', 'base64').toString() !== 'json/plain')
    return undefined;
  return { value: JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) };
}

/** Today's names, from the code itself. */
function currentNames(): Record<'workflows' | 'activities' | 'signals' | 'updates' | 'queries', string[]> {
  const defined = (Object.values(definitions) as unknown[]).filter(
    (entry): entry is { type: string; name: string } =>
      typeof entry === 'object' && entry !== null && 'type' in entry && 'name' in entry,
  );
  const of = (type: string) =>
    [...new Set(defined.filter((entry) => entry.type === type).map((entry) => entry.name))].sort();
  const activities = createActivities({
    registry: new AgentRegistry([], []),
    provider: { timeoutMs: 1000 },
    defaultModel: 'm',
  });
  return {
    workflows: Object.keys(workflows).sort(),
    activities: Object.keys(activities).sort(),
    signals: of('signal'),
    updates: of('update'),
    queries: of('query'),
  };
}

/** The input schemas recorded inputs must still parse with, by workflow, activity, signal or update name. */
const workflowInputs: Record<string, (raw: unknown) => unknown> = {
  agentRun: parseRunInput,
  chatSession: parseSessionInput,
  llmFunction: (raw) => LlmFunctionInput.parse(raw),
  notifyRunEnd: (raw) => NotifierInput.parse(raw),
};
const activityInputs: Record<string, z.ZodType> = {
  llmPhase: LlmPhaseInput,
  toolBatch: ToolBatchInput,
  localToolBatch: ToolBatchInput,
  reviewToolCalls: ToolReviewInput,
  deliverNotification: NotifyDeliveryInput,
};
const messageInputs: Record<string, z.ZodType> = {
  approve: ApprovalDecision,
  decide_approval: ApprovalDecision,
  extend_budget: BudgetExtension,
  child_approvals: ChildApprovals,
};

describe('names and inputs recorded runs use are still there', () => {
  it('every published name still exists, and every new one is published (test/fixtures/contract-names.json)', () => {
    const published = JSON.parse(
      readFileSync(join(__dirname, '..', 'fixtures', 'contract-names.json'), 'utf8'),
    ) as ReturnType<typeof currentNames>;
    expect(currentNames()).toEqual(published);
  });

  it('every workflow, activity, signal and update a recorded history used still exists and takes its recorded input', () => {
    const names = currentNames();
    const problems: string[] = [];
    let checked = 0;
    const check = (scenario: string, kind: keyof typeof names, name: string, payload: Payload | undefined) => {
      if (!names[kind].includes(name)) problems.push(`${scenario}: ${kind} '${name}' is gone`);
      const schema =
        kind === 'workflows'
          ? workflowInputs[name]
          : kind === 'activities'
            ? activityInputs[name]?.parse.bind(activityInputs[name])
            : messageInputs[name]?.parse.bind(messageInputs[name]);
      const recorded = valueOf(payload);
      if (!schema || !recorded) return;
      checked += 1;
      try {
        schema(recorded.value);
      } catch (error) {
        problems.push(
          `${scenario}: the recorded input of ${kind} '${name}' no longer parses: ${(error as Error).message.slice(0, 300)}`,
        );
      }
    };
    for (const { scenario, events } of histories)
      for (const event of events) {
        const started = event.workflowExecutionStartedEventAttributes;
        if (started) check(scenario, 'workflows', started.workflowType.name, started.input?.payloads?.[0]);
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled) check(scenario, 'activities', scheduled.activityType.name, scheduled.input?.payloads?.[0]);
        const signaled = event.workflowExecutionSignaledEventAttributes;
        if (signaled) check(scenario, 'signals', signaled.signalName, signaled.input?.payloads?.[0]);
        const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest.input;
        if (update) check(scenario, 'updates', update.name, update.args?.payloads?.[0]);
      }
    expect(problems).toEqual([]);
    // The gate reads real inputs: starts of every workflow type, activity inputs, decisions.
    expect(checked).toBeGreaterThan(100);
  });

  it('fails when a recorded input uses a field the schema lost', () => {
    const recorded = histories
      .flatMap((history) => history.events)
      .map((event) => valueOf(event.workflowExecutionStartedEventAttributes?.input?.payloads?.[0])?.value)
      .find((value) => typeof value === 'object' && value !== null && 'agent' in value) as Record<string, unknown>;
    expect(() => parseRunInput({ ...recorded, a_field_no_build_knows: 1 })).toThrow();
  });
});
