import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { describe, expect, it } from 'vitest';
import { countBillableActions } from '../../src/client/billable-actions';

function recorded(scenario: string) {
  const json: unknown = JSON.parse(readFileSync(join(__dirname, '..', 'histories', `${scenario}.json`), 'utf8'));
  return historyFromJSON(json).events ?? [];
}

const none = {
  workflow_starts: 0,
  activities: 0,
  activity_retries: 0,
  local_activity_tasks: 0,
  local_activity_retries: 0,
  timers: 0,
  signals: 0,
  updates: 0,
  search_attribute_upserts: 0,
  memo_upserts: 0,
  child_workflows: 0,
  options_updates: 0,
  heartbeats_estimated: 0,
};

describe('billable actions counted from a recorded history', () => {
  it('a tool run: its start and four activities (describeAgent, two model calls, a tool batch), none of them a second long', () => {
    expect(countBillableActions(recorded('tool-happy-path'))).toEqual({
      ...none,
      total: 5,
      workflow_starts: 1,
      activities: 4,
    });
  });

  it('an approval: a local activity, the wait timer, the update, and four upserts; the two of TemporalChangeVersion are free', () => {
    // By hand from the history: events 5, 12, 20, 38 schedule activities; 37 is the one local-activity
    // marker (task 32); 29 the timer; 33 the accepted update; 11, 26, 36, 44 upsert patchloop's
    // attributes; 19 and 28 only TemporalChangeVersion (patched()); 18 and 27 are patch markers.
    expect(countBillableActions(recorded('approval-wait-in-timeline'))).toEqual({
      ...none,
      total: 12,
      workflow_starts: 1,
      activities: 4,
      local_activity_tasks: 1,
      timers: 1,
      updates: 1,
      search_attribute_upserts: 4,
    });
  });

  it('the shape of 2026-12-06: the agent resolved locally, attributes from the start, one upsert at the end', () => {
    // By hand: event 1 starts the run with PatchloopAgent and PatchloopStatus (free); markers 9 and 18 are
    // local activities of tasks 4 and 15 (the agent, the fast tool); 10 and 19 schedule the model calls;
    // 25 upserts `completed`; 6, 8, 17 upsert only TemporalChangeVersion. Heartbeats: the first call took
    // 400 ms (one, at 250 ms), the second 3,203 ms (at 0.25, 1.25, 2.25 s: three).
    expect(countBillableActions(recorded('agent-resolved-locally'))).toEqual({
      ...none,
      total: 10,
      workflow_starts: 1,
      activities: 2,
      local_activity_tasks: 2,
      search_attribute_upserts: 1,
      heartbeats_estimated: 4,
    });
  });

  it('a worker killed during a tool batch: the retry, and the heartbeats of its 3.0 s second attempt', () => {
    // Event 18: the batch's attempt 2, started 21:19:01.467, completed 21:19:04.492 (heartbeat timeout 2 s).
    expect(countBillableActions(recorded('crash-during-batch'))).toEqual({
      ...none,
      total: 9,
      workflow_starts: 1,
      activities: 4,
      activity_retries: 1,
      heartbeats_estimated: 3,
    });
  });
});
