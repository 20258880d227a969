// The one line `npm test` ends with: what ran and what passed, from vitest's JSON reports.
import { readFileSync } from 'node:fs';

const parts = [];
let failed = 0;
for (const project of ['unit', 'e2e']) {
  const report = JSON.parse(readFileSync(`.test-results/${project}.json`, 'utf8'));
  failed += report.numFailedTests;
  parts.push(`${report.numPassedTests}/${report.numTotalTests} ${project}`);
}
console.log(
  `\nnpm test: ${failed === 0 ? 'all passed' : `${failed} FAILED`}: ${parts.join(', ')} tests (plus typecheck, format and lint)`,
);
process.exitCode = failed === 0 ? 0 : 1;
