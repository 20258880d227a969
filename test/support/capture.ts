import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { takeLogs } from './captured-logs';
import { cpuSeconds, recordCpu } from './cpu-time';

let file: string | undefined;
let cpuAtTestStart = 0;
// Each test starts with an empty log; a failed one shows what the workers logged while it ran.
beforeEach(({ task }) => {
  file = task.file.filepath;
  cpuAtTestStart = cpuSeconds();
  takeLogs();
});
afterEach(({ task }) => {
  // A test of a concurrent suite shares the process with its neighbours: its own time is not known.
  if (!task.concurrent) recordCpu(`${task.file.filepath} > ${task.name}`, cpuSeconds() - cpuAtTestStart);
  const logs = takeLogs();
  if (task.result?.state === 'fail' && logs.length > 0)
    console.error(`worker logs of the failed test "${task.name}":\n${logs.join('\n')}`);
});

// Each file ends with the environment it started with: e2e files share their process (Vitest does not
// isolate them), and what one sets for its workers and CLI processes must not reach the next file's.
const environment = { ...process.env };
afterAll(() => {
  for (const name of Object.keys(process.env)) if (!(name in environment)) delete process.env[name];
  Object.assign(process.env, environment);
});

// The CPU time of each file (its process and the processes it started), which `npm test` lists.
let cpuAtStart = 0;
beforeAll(() => void (cpuAtStart = cpuSeconds()));
afterAll(() => {
  if (file) recordCpu(file, cpuSeconds() - cpuAtStart);
});
