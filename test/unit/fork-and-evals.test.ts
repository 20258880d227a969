import { describe, expect, it } from 'vitest';
import {
  AgentSpec,
  checkCase,
  forkedState,
  parseVerdict,
  recordedAnswers,
  recordedCalls,
  RUN_STATE_SCHEMA_VERSION,
  type AgentRunState,
  type CaseOutcome,
} from '../../src/runtime';
import { AgentRunState as AgentRunStateSchema } from '../../src/runtime';
import { junitXml } from '../../src/cli/junit';
import type { Message } from '../../src/context';

const agent = AgentSpec.parse({ name: 'payer', instructions: 'Pay the bills.', model: 'small', tool_descriptors: [] });

function captured(): AgentRunState {
  return AgentRunStateSchema.parse({
    schema_version: RUN_STATE_SCHEMA_VERSION,
    agent,
    continued: 3,
    transcript: [
      { role: 'system', content: 'Pay the bills.' },
      { role: 'user', content: 'pay' },
    ],
    pending: [{ type: 'UserMessageMutation', message: { role: 'user', content: 'also the gas' } }],
    inbox: [{ id: 4, content: 'queued' }],
    next_inbox_id: 5,
    iteration: 7,
    llm_calls: 7,
    tool_calls: 6,
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
    fork_count: 1,
    event_seq: 40,
    recent_events: [{ seq: 40, event_type: 'react_iteration_start' }],
  });
}

describe('forkedState', () => {
  it("keeps the original's context and iteration, and starts what it spent and recorded from nothing", () => {
    const state = forkedState(captured(), { workflow_id: 'original', at: 7 });
    const original = captured();
    expect(state.transcript).toEqual(original.transcript);
    expect(state.pending).toEqual(original.pending);
    expect(state.inbox).toEqual(original.inbox);
    expect([state.iteration, state.fork_count, state.agent]).toEqual([7, 1, agent]);
    expect([state.llm_calls, state.tool_calls, state.usage, state.event_seq, state.continued]).toEqual([
      0,
      0,
      null,
      0,
      0,
    ]);
    expect(state.recent_events).toEqual([]);
  });

  it('overrides: the model in the spec, the instructions as a patch over the pending ones, a message queued', () => {
    const state = forkedState(captured(), {
      workflow_id: 'original',
      at: 7,
      model: 'large',
      instructions: 'Pay only small bills.',
      message: 'and the water',
    });
    expect([state.agent.model, state.agent.instructions]).toEqual(['large', 'Pay only small bills.']);
    expect(state.pending[0]).toEqual(captured().pending[0]);
    // The system prompt is replaced over the transcript as the pending patch leaves it: its message stays.
    expect(state.pending[1]).toEqual({
      type: 'ContextReplaceMutation',
      messages: [
        { role: 'system', content: 'Pay only small bills.' },
        { role: 'user', content: 'pay' },
        { role: 'user', content: 'also the gas' },
      ],
    });
    expect(state.inbox.at(-1)).toEqual({ id: 5, content: 'and the water' });
    expect(state.next_inbox_id).toBe(6);
  });
});

describe('tool recordings', () => {
  const transcript: Message[] = [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris","units":"c"}' } },
        { id: 'b', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris","units":"c"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'a', content: 'sunny' },
    { role: 'tool', tool_call_id: 'b', content: 'still sunny' },
  ];

  it('match by tool and arguments as JSON values, in order, the last one again once used up', () => {
    const recordings = { from_run: 'r', calls: recordedCalls(transcript), fallthrough: false };
    expect(recordings.calls).toEqual([
      { name: 'weather', arguments: '{"city":"Paris","units":"c"}', content: 'sunny' },
      { name: 'weather', arguments: '{"city":"Paris","units":"c"}', content: 'still sunny' },
    ]);
    const used = new Map<string, number>();
    const call = (id: string, args: string, name = 'weather') => ({ id, name, arguments: args });
    expect(
      recordedAnswers(
        recordings,
        [
          call('1', '{ "units": "c", "city": "Paris" }'),
          call('2', '{"city":"Oslo","units":"c"}'),
          call('3', '{}', 'other'),
        ],
        used,
      ),
    ).toEqual(['sunny', undefined, undefined]);
    expect(recordedAnswers(recordings, [call('4', '{"units":"c","city":"Paris"}')], used)).toEqual(['still sunny']);
    expect(recordedAnswers(recordings, [call('5', '{"units":"c","city":"Paris"}')], used)).toEqual(['still sunny']);
  });
});

describe('evaluation checks', () => {
  const outcome: CaseOutcome = {
    status: 'completed',
    answer: 'Forecast for Paris: sunny',
    tools: ['weather', 'news', 'weather'],
    llm_calls: 3,
    total_tokens: 300,
    unrecorded: [],
  };

  it('each expectation passes or fails on what the run came to, with what it saw', () => {
    const checks = checkCase(
      {
        answer_contains: ['sunny', 'rain'],
        answer_matches: '^Forecast',
        tools_in_order: ['weather', 'weather'],
        tools_exact: ['weather', 'news'],
        tools_any_order: ['news', 'weather'],
        max_llm_calls: 2,
        max_total_tokens: 300,
      },
      outcome,
    );
    expect(checks.map((check) => [check.check, check.passed])).toEqual([
      ['completed', true],
      ['answer_contains', true],
      ['answer_contains', false],
      ['answer_matches', true],
      ['tools_exact', false],
      ['tools_in_order', true],
      ['tools_any_order', true],
      ['max_llm_calls', false],
      ['max_total_tokens', true],
    ]);
    expect(checks[7]!.detail).toBe('3 model call(s)');
  });

  it('a run that did not complete, a call with no recording and a judge below its score fail', () => {
    const checks = checkCase(
      { judge: { agent: 'judge', rubric: 'r', min_score: 0.5 } },
      { ...outcome, status: 'aborted', unrecorded: ['weather'], judge: { score: 0.4, reason: 'vague' } },
    );
    expect(checks).toEqual([
      { check: 'completed', passed: false, detail: 'the run ended aborted' },
      { check: 'recorded_tools', passed: false, detail: 'no recording for weather' },
      { check: 'judge', passed: false, detail: 'score 0.4 (at least 0.5): vague' },
    ]);
  });

  it("reads the judge's verdict from JSON, fenced or not, and says what is wrong with anything else", () => {
    expect(parseVerdict('{"score": 0.8, "reason": "good"}')).toEqual({ score: 0.8, reason: 'good' });
    expect(parseVerdict('```json\n{"score": 1, "reason": "exact"}\n```')).toEqual({ score: 1, reason: 'exact' });
    expect(parseVerdict('{"score": 3, "reason": "too high"}')).toHaveProperty('problem');
    expect(parseVerdict('great answer')).toEqual({
      problem: 'the judge did not answer {"score", "reason"}: "great answer"',
    });
  });

  it('JUnit XML escapes what XML does not allow in text and attributes', () => {
    const xml = junitXml('cases.yaml', [
      {
        candidate: { agent: 'a', model: 'm' },
        cases: [
          {
            name: 'quotes " & <tags>',
            run_id: 'eval-1',
            status: 'completed',
            answer: 'x',
            passed: false,
            checks: [{ check: 'answer_equals', passed: false, detail: 'answer "a\u0001b" <c>' }],
            tools: [],
            llm_calls: 1,
            total_tokens: 10,
            cost_usd: null,
            duration_ms: 1500,
          },
        ],
        passed: 0,
        failed: 1,
        score: 0,
        total_tokens: 10,
        cost_usd: null,
      },
    ]);
    expect(xml).toContain(
      '<testcase name="quotes &quot; &amp; &lt;tags&gt;" classname="cases.yaml (a with m)" time="1.500">',
    );
    expect(xml).toContain('answer_equals: answer &quot;ab&quot; &lt;c&gt;\nrun: eval-1</failure>');
    expect(xml).toContain('<testsuites name="patchloop eval" tests="1" failures="1" errors="0">');
  });
});
