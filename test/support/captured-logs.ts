import { DefaultLogger, type LogEntry } from '@temporalio/worker';

/**
 * Worker and core log lines of this test process, held back: tests cause failures on purpose, and
 * their WARN dumps would bury a real one. A failed test prints what its workers logged (capture.ts).
 */
const entries: string[] = [];

export const capturingLogger = new DefaultLogger('WARN', (entry: LogEntry) => {
  const meta = entry.meta && Object.keys(entry.meta).length > 0 ? ` ${JSON.stringify(entry.meta)}` : '';
  entries.push(`[${entry.level}] ${entry.message}${meta}`);
});

export function takeLogs(): string[] {
  return entries.splice(0);
}
