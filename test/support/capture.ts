import { afterEach, beforeEach } from 'vitest';
import { takeLogs } from './captured-logs';

// Each test starts with an empty log; a failed one shows what the workers logged while it ran.
beforeEach(() => void takeLogs());
afterEach((context) => {
  const logs = takeLogs();
  if (context.task.result?.state === 'fail' && logs.length > 0)
    console.error(`worker logs of the failed test "${context.task.name}":\n${logs.join('\n')}`);
});
