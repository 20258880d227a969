import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { RunHandle } from '../../src/client/patchloop-client';
import { pendingHeartbeatDetails } from '../../src/streaming/chunk-client';
import type { RunEvent, RunEventType } from '../../src/runtime';

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
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
    30_000,
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
    30_000,
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
    30_000,
    `${count} finished call(s)`,
  );
}

/**
 * Saves the run's history under test/histories/ when RECORD_HISTORIES=1, so the replay test can check
 * that today's workflow code still replays it.
 */
export async function recordHistory(run: RunHandle, name: string): Promise<void> {
  if (process.env['RECORD_HISTORIES'] !== '1') return;
  const history = await run.workflow.fetchHistory();
  const folder = join(__dirname, '..', 'histories');
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, `${name}.json`), historyToJSON(history));
  // Replay needs the original workflow id: fork children's ids derive from it.
  const indexFile = join(folder, 'workflow-ids.json');
  const index = existsSync(indexFile) ? (JSON.parse(readFileSync(indexFile, 'utf8')) as Record<string, string>) : {};
  index[name] = run.workflowId;
  writeFileSync(indexFile, `${JSON.stringify(Object.fromEntries(Object.entries(index).sort()), null, 2)}\n`);
}
