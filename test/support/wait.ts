import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { RunHandle } from '../../src/client/patchloop-client';
import { pendingHeartbeatDetails } from '../../src/streaming/chunk-client';
import type { PendingApproval, RunEvent, RunEventType } from '../../src/runtime';

/**
 * How long a wait for a condition may take before it fails: a bound on a hang, not on speed (a loaded
 * machine took over 30 s for a local model's first 40 characters). A test that needs a time bound
 * asserts it itself.
 */
const CONDITION_TIMEOUT_MS = 120_000;

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = CONDITION_TIMEOUT_MS,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

/** Waits until the run has logged an event of this type (through the status query). */
export function eventOf(
  run: RunHandle,
  type: RunEventType,
  matches: (event: RunEvent) => boolean = () => true,
): Promise<RunEvent> {
  return eventually(
    async () => (await run.status()).events.find((event) => event.event_type === type && matches(event)),
    CONDITION_TIMEOUT_MS,
    `event ${type}`,
  );
}

/** Waits until the run's LLM activity reports holding at least `chars` characters of the reply. */
export function replyReceived(run: RunHandle, chars: number): Promise<true> {
  return eventually(
    async () =>
      (await pendingHeartbeatDetails(run.workflow)).some((details) => Number(details['chars'] ?? -1) >= chars)
        ? true
        : undefined,
    CONDITION_TIMEOUT_MS,
    `${chars} characters received`,
  );
}

/** Waits until the run's tool batch reports at least `count` finished calls. */
export function callsFinished(run: RunHandle, count: number): Promise<true> {
  return eventually(
    async () =>
      (await pendingHeartbeatDetails(run.workflow)).some((details) => Number(details['finished'] ?? -1) >= count)
        ? true
        : undefined,
    CONDITION_TIMEOUT_MS,
    `${count} finished call(s)`,
  );
}

/**
 * Saves the run's history under test/histories/ when RECORD_HISTORIES=1, so the replay test can check
 * that today's workflow code still replays it.
 */
export async function recordHistory(run: RunHandle, name: string, runId?: string): Promise<void> {
  if (process.env['RECORD_HISTORIES'] !== '1') return;
  const folder = join(__dirname, '..', 'histories');
  const file = join(folder, `${name}.json`);
  // The corpus is a compatibility gate: a history, once recorded, is never recorded again.
  if (existsSync(file)) return;
  // By default the workflow's latest run; with a run id, that run of a continue-as-new chain.
  const handle = runId ? run.workflow.client.getHandle(run.workflowId, runId) : run.workflow;
  const text = historyToJSON(await handle.fetchHistory());
  mkdirSync(folder, { recursive: true });
  writeFileSync(file, text);
  // Replay needs the original workflow id (fork children's ids derive from it); the manifest pins the bytes.
  updateJson(join(folder, 'workflow-ids.json'), name, run.workflowId);
  updateJson(join(folder, 'manifest.json'), name, createHash('sha256').update(text).digest('hex'));
}

function updateJson(file: string, key: string, value: string): void {
  const index = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
  index[key] = value;
  writeFileSync(file, `${JSON.stringify(Object.fromEntries(Object.entries(index).sort()), null, 2)}\n`);
}

/**
 * Saves the input the run's current execution started with (the state a continue-as-new carried) under
 * test/fixtures/carried-state/ when RECORD_HISTORIES=1. Each schema version keeps a fixture that later
 * builds must still load (test/unit/carried-state.test.ts); never re-record an existing version.
 */
export async function recordCarriedState(run: RunHandle, name: string): Promise<void> {
  if (process.env['RECORD_HISTORIES'] !== '1') return;
  const history = await run.workflow.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const payload = started?.input?.payloads?.[0];
  if (!payload?.data) throw new Error('the run has no input to record');
  const input = JSON.parse(Buffer.from(payload.data).toString('utf8')) as { state?: unknown };
  if (!input.state) throw new Error('this execution carries no state: it did not continue as new yet');
  const folder = join(__dirname, '..', 'fixtures', 'carried-state');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${name}.json`);
  if (existsSync(file)) return;
  writeFileSync(file, `${JSON.stringify(input, null, 2)}\n`);
}

/** Waits until the run reports exactly these calls (by id, in order) as waiting for a decision. */
export function awaitingApproval(run: RunHandle, ids: string[]): Promise<PendingApproval[]> {
  return eventually(
    async () => {
      const status = await run.status();
      const pending = status.pending_approvals.map((entry) => entry.tool_call_id);
      return status.state === 'awaiting_approval' && JSON.stringify(pending) === JSON.stringify(ids)
        ? status.pending_approvals
        : undefined;
    },
    CONDITION_TIMEOUT_MS,
    `calls ${ids.join(', ')} awaiting approval`,
  );
}

/** Waits until the run has started a sub-agent run for this call, and returns the child's workflow id. */
export async function startedChild(run: RunHandle, toolCallId: string): Promise<string> {
  const event = await eventOf(
    run,
    'subagent_started',
    (entry) => (entry as { tool_call_id?: string }).tool_call_id === toolCallId,
  );
  return (event as { child_workflow_id: string }).child_workflow_id;
}
