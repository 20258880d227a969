import { describe, expect, it } from 'vitest';
import { decideNext, type NextStep, type TurnFacts } from '../../src/runtime';

const call = (id: string) => ({ id, name: 'add', arguments: '{}' });
const base: TurnFacts = {
  outcome: 'completed',
  calls: [],
  toolCalls: 0,
  maxToolCalls: null,
  messagesWaiting: false,
  abortRequested: false,
  lastCall: false,
};

describe('decideNext: what the loop does after an LLM phase (spec 7.3 step 5)', () => {
  it.each<[string, Partial<TurnFacts>, NextStep]>([
    ['an aborted phase finishes aborted', { outcome: 'aborted', calls: [call('a')] }, { type: 'aborted' }],
    ['an aborted phase wins over waiting messages', { outcome: 'aborted', messagesWaiting: true }, { type: 'aborted' }],
    ['an answer without tool calls is final', {}, { type: 'final' }],
    ['an answer with messages waiting runs again', { messagesWaiting: true }, { type: 'run_again' }],
    [
      'an answer with messages waiting after an abort is final',
      { messagesWaiting: true, abortRequested: true },
      { type: 'final' },
    ],
    ['tool calls run', { calls: [call('a'), call('b')] }, { type: 'run_tools', calls: [call('a'), call('b')] }],
    [
      'tool calls within the budget run',
      { calls: [call('a')], toolCalls: 2, maxToolCalls: 3 },
      { type: 'run_tools', calls: [call('a')] },
    ],
    [
      'a batch past the budget reaches the limit',
      { calls: [call('a'), call('b')], toolCalls: 2, maxToolCalls: 3 },
      { type: 'limit_reached' },
    ],
    ['a budget of 0 refuses any call', { calls: [call('a')], maxToolCalls: 0 }, { type: 'limit_reached' }],
    [
      'tool calls win over waiting messages (they fold at the next boundary)',
      { calls: [call('a')], messagesWaiting: true },
      { type: 'run_tools', calls: [call('a')] },
    ],
    ['the budget’s last call is final', { lastCall: true }, { type: 'final' }],
    [
      'the budget’s last call runs again when messages wait',
      { lastCall: true, messagesWaiting: true },
      { type: 'run_again' },
    ],
    // Tools asked for despite none offered: the commit fails linkage validation (spec 10.e).
    [
      'the budget’s last call never runs tools',
      { lastCall: true, calls: [call('a')], maxToolCalls: 0 },
      { type: 'final' },
    ],
  ])('%s', (_name, facts, expected) => {
    expect(decideNext({ ...base, ...facts })).toEqual(expected);
  });
});
