import type { EvaluationReport } from '../client/evaluation';

/**
 * An evaluation as JUnit XML (the schema CI systems read: testsuites, one testsuite per candidate, a
 * testcase per case, a failure per case that failed with each failed check in its text).
 */
export function junitXml(dataset: string, reports: readonly EvaluationReport[]): string {
  const suites = reports.map((report) => {
    const name = `${dataset} (${candidateName(report)})`;
    const seconds = report.cases.reduce((sum, result) => sum + result.duration_ms, 0) / 1000;
    const cases = report.cases.map((result) => {
      const attributes = `name="${escape(result.name)}" classname="${escape(name)}" time="${(result.duration_ms / 1000).toFixed(3)}"`;
      if (result.passed) return `    <testcase ${attributes}/>`;
      const failed = result.checks.filter((check) => !check.passed);
      const message = failed.map((check) => check.check).join(', ');
      const text = failed.map((check) => `${check.check}: ${check.detail}`).join('\n');
      return [
        `    <testcase ${attributes}>`,
        `      <failure message="${escape(message)}" type="EvalFailure">${escape(`${text}\nrun: ${result.run_id}`)}</failure>`,
        '    </testcase>',
      ].join('\n');
    });
    return [
      `  <testsuite name="${escape(name)}" tests="${report.cases.length}" failures="${report.failed}" errors="0" skipped="0" time="${seconds.toFixed(3)}">`,
      ...cases,
      '  </testsuite>',
    ].join('\n');
  });
  const tests = reports.reduce((sum, report) => sum + report.cases.length, 0);
  const failures = reports.reduce((sum, report) => sum + report.failed, 0);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="patchloop eval" tests="${tests}" failures="${failures}" errors="0">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}

/** The candidate as tables and suites name it: its agent, and its model when one was given. */
export function candidateName(report: Pick<EvaluationReport, 'candidate'>): string {
  const { agent, model } = report.candidate;
  return model ? `${agent} with ${model}` : agent;
}

function escape(text: string): string {
  return (
    text
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&quot;')
      .split('')
      // XML 1.0 allows no control characters but tab, newline and carriage return.
      .filter((character) => character >= ' ' || character === '\t' || character === '\n' || character === '\r')
      .join('')
  );
}
