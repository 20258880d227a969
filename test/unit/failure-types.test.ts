import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toErrorReport } from '../../src/cli/errors';
import { CliErrorType } from '../../src/common/cli-error-types';
import { failure, FailureType } from '../../src/common/failure-types';
import { ContextError, ContextErrorType } from '../../src/context';

/**
 * Every failure type patchloop has published, by audience: what runs fail with (`FailureType`), what
 * the CLI reports of its own (`CliErrorType`), context errors by kind (`ContextErrorType`). Runs,
 * recorded histories and scripts name them: none is ever renamed or removed.
 */
const published = JSON.parse(readFileSync(`${__dirname}/../fixtures/failure-types.json`, 'utf8')) as {
  run_failures: string[];
  cli_reports: string[];
  context_errors: Record<string, string>;
};

describe('the failure catalogue, by audience', () => {
  it('keeps every published type, each named as its value', () => {
    expect(Object.keys(FailureType)).toEqual(published.run_failures);
    expect(Object.keys(CliErrorType)).toEqual(published.cli_reports);
    expect(ContextErrorType).toEqual(published.context_errors);
    for (const group of [FailureType, CliErrorType])
      for (const [name, value] of Object.entries(group)) expect(value).toBe(name);
  });

  it('gives each type one audience: a run failure is never a CLI report', () => {
    const cli = new Set<string>(Object.values(CliErrorType));
    expect(Object.values(FailureType).filter((type) => cli.has(type))).toEqual([]);
    expect(Object.values(ContextErrorType).filter((type) => !cli.has(type))).toEqual([
      'LinkageError',
      'ExperienceError',
      'SummaryError',
    ]);
  });

  it('builds failures from run failure types only', () => {
    expect(failure(FailureType.UnknownAgent, 'no such agent').type).toBe('UnknownAgent');
    // @ts-expect-error a CLI report is not something a run or an activity fails with
    expect(failure(CliErrorType.UsageError, 'not a run failure').type).toBe('UsageError');
  });

  it('reports context errors by kind and bad CLI input with the CLI types', () => {
    expect(toErrorReport(new ContextError('linkage', 'broken link'))).toEqual({
      error: { type: 'LinkageError', message: 'broken link' },
    });
    expect(toErrorReport(new ContextError('invalid_input', 'bad'))).toEqual({
      error: { type: 'InvalidInput', message: 'bad' },
    });
    expect(toErrorReport(new SyntaxError('Unexpected token'))).toEqual({
      error: { type: 'InvalidJson', message: 'Unexpected token' },
    });
  });
});
