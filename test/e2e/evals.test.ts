import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { z } from 'zod';
import { it } from '../support/fixtures';
import { callTools, reply, toolCall, withUsage, type FakeStep } from '../../src/fake-model/steps';
import type { ChatRequestBody } from '../../src/fake-model/server';
import { defineTool } from '../../src/tools/define-tool';
import { evaluate, type EvaluationReport } from '../../src/client/evaluation';
import { EvalDataset } from '../../src/runtime';
import { repositoryRoot } from '../../support/repository';
import { runCli } from '../support/cli';

const FORECASTS: Record<string, string> = { paris: 'sunny, 24 °C', oslo: 'snow, -3 °C', lima: 'fog, 17 °C' };

/** The weather tool, counting its executions (a side effect a replayed case must never cause). */
function weatherTool(executions: string[]) {
  return defineTool({
    name: 'weather',
    description: "Today's forecast for a city.",
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => {
      executions.push(city);
      return FORECASTS[city.toLowerCase()] ?? `no forecast for ${city}`;
    },
  });
}

type Message = { role: string; content?: unknown };

/**
 * The scripted model: the forecaster asks the tool about the city its user names, then answers
 * "Forecast for X: ..."; the terse agent answers with the forecast alone; the judge scores an answer
 * that says "sunny" 0.9, any other 0.2.
 */
function responder(body: ChatRequestBody): FakeStep {
  const messages = body['messages'] as Message[];
  const system = String(messages[0]?.content ?? '');
  const last = messages.at(-1)!;
  if (system.includes('You judge answers.')) {
    const sunny = String(last.content).split('Answer:')[1]!.includes('sunny');
    return reply(
      JSON.stringify({ score: sunny ? 0.9 : 0.2, reason: sunny ? 'says the forecast' : 'misses it' }),
      withUsage(30, 8),
    );
  }
  const city = [...messages].reverse().find((message) => message.role === 'user')!.content as string;
  const name = city.replace(/^City: /, '');
  if (last.role !== 'tool') return callTools([toolCall(`call_${name}`, 'weather', { city: name })], withUsage(40, 6));
  // The tool's result as the model reads it: JSON text.
  const forecast = String(JSON.parse(String(last.content)));
  return reply(system.includes('Answer tersely.') ? forecast : `Forecast for ${name}: ${forecast}`, withUsage(60, 9));
}

const agents = [
  { name: 'forecaster', instructions: 'You answer about the weather.', tools: ['weather'] },
  { name: 'terse', instructions: 'Answer tersely.', tools: ['weather'] },
  { name: 'judge', instructions: 'You judge answers.' },
];

/** 20 cases: 14 the forecaster passes, 6 it fails (a wrong answer, tool order, the model-call limit, a judge). */
function dataset(): EvalDataset {
  const city = (name: string) => `City: ${name}`;
  const cases = [
    ...['Paris', 'Oslo', 'Lima', 'Paris', 'Oslo', 'Lima', 'Paris', 'Oslo'].map((name, index) => ({
      name: `forecast ${index + 1} (${name})`,
      input: city(name),
      expect: { answer_contains: FORECASTS[name.toLowerCase()]!.split(',')[0]!, tools_exact: ['weather'] },
    })),
    ...['Paris', 'Lima'].map((name) => ({
      name: `format (${name})`,
      input: city(name),
      expect: { answer_matches: '^Forecast for \\w+: ', tools_any_order: ['weather'], max_total_tokens: 1000 },
    })),
    { name: 'in order', input: city('Oslo'), expect: { tools_in_order: ['weather'], max_llm_calls: 2 } },
    { name: 'equals', input: city('Lima'), expect: { answer_equals: 'Forecast for Lima: fog, 17 °C' } },
    ...['Paris', 'Oslo'].map((name) => ({
      name: `judged (${name})`,
      input: city(name),
      expect: { judge: { agent: 'judge', rubric: 'Says the forecast: sunny is good.', min_score: 0.5 } },
    })),
    { name: 'wrong answer', input: city('Paris'), expect: { answer_contains: 'rain' } },
    { name: 'wrong answer too', input: city('Oslo'), expect: { answer_equals: 'snow' } },
    { name: 'tools twice', input: city('Lima'), expect: { tools_in_order: ['weather', 'weather'] } },
    { name: 'one call only', input: city('Paris'), expect: { max_llm_calls: 1 } },
    { name: 'too few tokens', input: city('Oslo'), expect: { max_total_tokens: 50 } },
    { name: 'no tools', input: city('Lima'), expect: { tools_exact: [] } },
  ];
  return EvalDataset.parse({ cases });
}

/** A report without what differs from run to run (ids, durations). */
function scored(report: EvaluationReport) {
  return report.cases.map(({ run_id: _id, duration_ms: _ms, judge_run_id: _judge, ...rest }) => rest);
}

describe('patchloop eval', () => {
  it('20 cases as durable runs: passes and failures by each check, a judge, and the same scores twice', async ({
    startWorld,
  }) => {
    const executions: string[] = [];
    const world = await startWorld({ agents, tools: [weatherTool(executions)], fake: { responder } });
    const first = await evaluate(world.client, dataset(), { agent: 'forecaster' }, { concurrency: 4 });
    expect(first.cases).toHaveLength(20);
    const failed = first.cases.filter((result) => !result.passed);
    expect(
      failed.map((result) => [result.name, result.checks.filter((check) => !check.passed).map((c) => c.check)]),
    ).toEqual([
      ['judged (Oslo)', ['judge']],
      ['wrong answer', ['answer_contains']],
      ['wrong answer too', ['answer_equals']],
      ['tools twice', ['tools_in_order']],
      ['one call only', ['max_llm_calls']],
      ['too few tokens', ['max_total_tokens']],
      ['no tools', ['tools_exact']],
    ]);
    expect([first.passed, first.failed, first.score]).toEqual([13, 7, 0.65]);
    const judged = first.cases.find((result) => result.name === 'judged (Paris)')!;
    expect(judged.checks.at(-1)).toEqual({
      check: 'judge',
      passed: true,
      detail: 'score 0.9 (at least 0.5): says the forecast',
    });
    expect(first.cases[0]).toMatchObject({ status: 'completed', tools: ['weather'], llm_calls: 2, total_tokens: 115 });
    expect(first.total_tokens).toBe(20 * 115);
    expect(executions).toHaveLength(20);
    const second = await evaluate(world.client, dataset(), { agent: 'forecaster' }, { concurrency: 3 });
    expect(scored(second)).toEqual(scored(first));
  });

  it('cases forked from a recorded run, tools answered from its recording: the side-effecting tool never runs; a call with no recording fails its case', async ({
    startWorld,
  }) => {
    const executions: string[] = [];
    const world = await startWorld({ agents, tools: [weatherTool(executions)], fake: { responder } });
    const recorded = await world.client.start(
      { agent: 'forecaster', input: 'City: Paris' },
      { workflowId: 'eval-recorded' },
    );
    expect((await recorded.result()).answer).toBe('Forecast for Paris: sunny, 24 °C');
    expect(executions).toEqual(['Paris']);
    const replayed = EvalDataset.parse({
      tools: 'recorded',
      cases: [
        {
          name: 'from the start',
          from_run: { run: 'eval-recorded', at: 0 },
          expect: { answer_contains: 'sunny', tools_exact: ['weather'] },
        },
        {
          name: 'terse from the start',
          input: 'City: Paris',
          recorded_run: 'eval-recorded',
          expect: { answer_equals: 'sunny, 24 °C' },
        },
        { name: 'a city never recorded', input: 'City: Oslo', recorded_run: 'eval-recorded', expect: {} },
      ],
    });
    const report = await evaluate(world.client, replayed, { agent: 'terse' });
    expect(report.cases.map((result) => [result.name, result.passed])).toEqual([
      ['from the start', true],
      ['terse from the start', true],
      ['a city never recorded', false],
    ]);
    // The terse agent answers the forecast alone: the fork ran, with the tool answered from the recording.
    expect(report.cases[0]!.answer).toBe('sunny, 24 °C');
    expect(report.cases[0]!.tools).toEqual(['weather']);
    expect(report.cases[2]!.checks.find((check) => !check.passed)).toEqual({
      check: 'recorded_tools',
      passed: false,
      detail: 'no recording for weather',
    });
    expect(executions).toEqual(['Paris']);
    // Falling through to the live tool, the call no recording answers runs.
    const live = await evaluate(
      world.client,
      { ...replayed, fallthrough: true, cases: [replayed.cases[2]!] },
      { agent: 'forecaster' },
    );
    expect(live.cases[0]).toMatchObject({ passed: true, answer: 'Forecast for Oslo: snow, -3 °C' });
    expect(executions).toEqual(['Paris', 'Oslo']);
  });

  it('the CLI: --compare side by side with the deltas, JSON, JUnit XML valid against its schema, exit 1 on failures', async ({
    startWorld,
  }) => {
    const world = await startWorld({ agents, tools: [weatherTool([])], fake: { responder } });
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-eval-'));
    const cases = dataset()
      .cases.slice(0, 2)
      .concat(dataset().cases.filter((item) => item.name === 'equals'));
    writeFileSync(
      join(folder, 'dataset.yaml'),
      `cases:\n${cases.map((item) => `  - ${JSON.stringify(item)}`).join('\n')}\n`,
    );
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const ran = await runCli(
      [
        'eval',
        join(folder, 'dataset.yaml'),
        '--compare',
        'forecaster',
        'terse',
        '--json',
        join(folder, 'report.json'),
        '--junit',
        join(folder, 'report.xml'),
      ],
      env,
    );
    expect(ran.code).toBe(1);
    const lines = ran.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^case\s+forecaster\s+tokens\s+terse\s+tokens$/);
    expect(lines[1]).toMatch(/^forecast 1 \(Paris\)\s+pass\s+115\s+pass\s+115$/);
    expect(lines[3]).toMatch(/^equals\s+pass\s+115\s+FAIL \(answer_equals\)\s+115$/);
    expect(lines[4]).toMatch(/^score\s+3\/3 \(100%\)\s+345\s+2\/3 \(67%\)\s+345$/);
    expect(lines[5]).toBe('terse against forecaster: score -33 points, tokens +0');
    const json = JSON.parse(readFileSync(join(folder, 'report.json'), 'utf8')) as { reports: EvaluationReport[] };
    expect(json.reports.map((report) => [report.candidate.agent, report.passed, report.failed])).toEqual([
      ['forecaster', 3, 0],
      ['terse', 2, 1],
    ]);
    const xml = readFileSync(join(folder, 'report.xml'), 'utf8');
    expect(xml).toContain('<failure message="answer_equals" type="EvalFailure">');
    // Validated against the JUnit schema by a validator of its own (Python's xmlschema).
    const validate = (file: string) =>
      execFileSync(
        join(repositoryRoot, '.venv', 'bin', 'python'),
        [
          '-c',
          'import sys, xmlschema; xmlschema.XMLSchema(sys.argv[1]).validate(sys.argv[2])',
          join(repositoryRoot, 'test', 'fixtures', 'junit.xsd'),
          file,
        ],
        { stdio: 'pipe' },
      );
    validate(join(folder, 'report.xml'));
    // The validator refuses what the schema does not allow (a count that is not a number).
    writeFileSync(join(folder, 'broken.xml'), xml.replace(/tests="\d+"/, 'tests="three"'));
    expect(() => validate(join(folder, 'broken.xml'))).toThrow(/tests/);
    const bad = await runCli(['eval', join(folder, 'report.json'), '--agent', 'forecaster'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not valid');
  });
});
