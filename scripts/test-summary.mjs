// What `npm test` ends with: every test file's time, the phases, and one line of what ran and passed,
// from vitest's JSON reports.
import { existsSync, readFileSync } from 'node:fs';
import { stripVTControlCharacters } from 'node:util';

const parts = [];
const files = [];
let failed = 0;
const failures = [];
// The projects that ran (all unless named: the e2e ones do not run after a unit failure).
const projects =
  process.argv.length > 2 ? process.argv.slice(2) : ['unit', 'e2e', 'e2e-alone', 'cluster', 'cluster-alone'];
for (const project of projects) {
  const path = `.test-results/${project}.json`;
  if (!existsSync(path)) {
    // A project that did not run (or crashed before its report) is a failure, never a silent skip.
    failed += 1;
    parts.push(`${project}: no report`);
    continue;
  }
  const report = JSON.parse(readFileSync(path, 'utf8'));
  failed += report.numFailedTests + (report.success ? 0 : report.numFailedTests === 0 ? 1 : 0);
  parts.push(`${report.numPassedTests}/${report.numTotalTests} ${project}`);
  for (const file of report.testResults) {
    for (const test of file.assertionResults)
      if (test.status === 'failed')
        failures.push({
          name: `${file.name.replace(/^.*?\/test\//, 'test/')} > ${test.fullName}`,
          messages: test.failureMessages,
        });
    // A file that failed to load (or a hook that threw) has a message but no failed test.
    if (file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'))
      failures.push({ name: file.name.replace(/^.*?\/test\//, 'test/'), messages: [file.message ?? ''] });
    files.push({
      project,
      name: file.name.replace(/^.*?\/test\//, 'test/'),
      tests: file.assertionResults.length,
      seconds: (file.endTime - file.startTime) / 1000,
    });
  }
}
// CPU seconds of each end-to-end file (its process and the processes it waited for) and of the dev
// server, from .test-results/cpu.tsv (test/support/cpu-time.ts): what a loaded machine does not inflate.
const cpu = new Map();
if (existsSync('.test-results/cpu.tsv'))
  for (const line of readFileSync('.test-results/cpu.tsv', 'utf8').trim().split('\n')) {
    const [name, seconds] = line.split('\t');
    cpu.set(name, (cpu.get(name) ?? 0) + Number(seconds));
  }
const cpuOf = (name) => (cpu.has(name) ? cpu.get(name).toFixed(1) : '');
files.sort((a, b) => b.seconds - a.seconds);
console.log('\nper file (seconds, tests, CPU seconds):');
for (const file of files)
  console.log(
    `${file.seconds.toFixed(1).padStart(7)} ${String(file.tests).padStart(4)} ${cpuOf(file.name).padStart(7)}  ${file.project.padEnd(9)} ${file.name}`,
  );
if (cpu.has('temporal dev server')) console.log(`the e2e dev servers: ${cpuOf('temporal dev server')} CPU seconds`);
const tests = [...cpu].filter(([name]) => name.includes(' > ')).sort((a, b) => b[1] - a[1]);
if (tests.length > 0) {
  console.log('\nthe tests that took the most CPU (seconds):');
  for (const [name, seconds] of tests.slice(0, 10)) console.log(`${seconds.toFixed(1).padStart(7)}  ${name}`);
}
if (existsSync('.test-results/phases.tsv')) {
  console.log('\nphases (wall seconds):');
  for (const line of readFileSync('.test-results/phases.tsv', 'utf8').trim().split('\n')) {
    const [name, seconds] = line.split('\t');
    console.log(`${seconds.padStart(7)}  ${name}`);
  }
}
// The failures last, where a log's tail shows them: each test's name and the start of its message.
if (failures.length > 0) {
  console.log('\nfailed:');
  for (const failure of failures) {
    console.log(`  ${failure.name}`);
    const message = stripVTControlCharacters(failure.messages.join('\n'));
    for (const line of message.split('\n').slice(0, 12)) console.log(`    ${line.slice(0, 300)}`);
  }
}
console.log(
  `\nnpm test: ${failed === 0 ? 'all passed' : `${failed} FAILED`}: ${parts.join(', ')} tests (plus typecheck, format and lint)`,
);
process.exitCode = failed === 0 ? 0 : 1;
