import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { eventOf, recordHistory, replyReceived } from '../support/wait';

const memo: AgentDefinitionInput = {
  name: 'memo',
  instructions: 'You remember things.',
  tools: ['add'],
  selfref: true,
};
const agents = [memo, { name: 'assistant', instructions: 'plain', tools: ['add', 'wait', 'repeat'] }];

const systemOf = (messages: Array<Record<string, unknown>>) => messages[0]!['content'] as string;
const summaryArgs = {
  goal: 'Ship the parser',
  instruction: 'Keep tests green',
  discoveries: ['Tokenizer is slow', '  '],
  completed: ['Wrote lexer'],
  current_status: 'Parser half done',
  likely_next_work: ['Write AST builder'],
  relevant_files_directories: ['src/parser.py'],
  remember: ['Prefer   small diffs'],
};

describe('SelfRef primitives through the durable runtime', () => {
  it('remember and forget: the experience reaches the very next request, then leaves it', async ({ startWorld }) => {
    const world = await startWorld({
      agents,
      fake: {
        script: [
          callTools([{ id: 'r1', name: 'selfref_remember', arguments: '{"text": "User prefers   metric units"}' }]),
          callTools([{ id: 'f1', name: 'selfref_forget', arguments: '{"experience_id": "exp_1"}' }]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'remember my units, then forget them' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const [first, second, third] = world.fake.requests.map((request) => request.body.messages);
    expect(systemOf(first!)).not.toContain('<experience>');
    expect(systemOf(second!)).toContain(
      'You remember things.\n\n<experience>\n- [exp_1] User prefers metric units\n</experience>',
    );
    expect(second!.find((m) => m['tool_call_id'] === 'r1')).toEqual({
      role: 'tool',
      tool_call_id: 'r1',
      content: '{\n  "id": "pending::User prefers metric units",\n  "text": "User prefers metric units"\n}',
    });
    expect(systemOf(third!)).not.toContain('<experience>');
    expect(third!.find((m) => m['tool_call_id'] === 'f1')!['content']).toBe('true');
    expect(
      world.fake.requests[0]!.body.tools!.map((tool) => (tool as { function: { name: string } }).function.name),
    ).toEqual(['add', 'selfref_remember', 'selfref_forget', 'selfref_compact', 'selfref_fork']);
    validateToolLinkage(result.transcript);
    world.fake.assertDone();
    await recordHistory(run, 'selfref-remember-forget');
  });

  it('compact: the next call sees only the system prompt with the new experience and the rendered summary', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents,
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'selfref_compact', arguments: JSON.stringify(summaryArgs) }]),
          reply('compacted'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'compact please' });
    const result = await run.result();
    const next = world.fake.requests[1]!.body.messages;
    const summary =
      '<context_compaction_summary>\n## Goal\nShip the parser\n\n## Instruction\nKeep tests green\n\n## Discoveries\n- Tokenizer is slow\n\n## Completed\n- Wrote lexer\n\n## Current Status\nParser half done\n\n## Likely next work\n- Write AST builder\n\n## Relevant files/directories\n- src/parser.py\n</context_compaction_summary>';
    expect(next).toHaveLength(2);
    expect(systemOf(next)).toContain(
      'You remember things.\n\n<experience>\n- [exp_1] Prefer small diffs\n</experience>',
    );
    expect(next[1]).toEqual({ role: 'assistant', content: summary });
    expect(result.transcript).toEqual([
      { role: 'system', content: 'You remember things.\n\n<experience>\n- [exp_1] Prefer small diffs\n</experience>' },
      { role: 'assistant', content: summary },
      { role: 'assistant', content: 'compacted' },
    ]);
    world.fake.assertDone();
    await recordHistory(run, 'selfref-compact');
  });

  it('compact with invalid fields fails the call with the spec message, and the run goes on', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents,
      fake: {
        script: [
          callTools([{ id: 'c1', name: 'selfref_compact', arguments: JSON.stringify({ ...summaryArgs, goal: '  ' }) }]),
          reply('ok'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'compact badly' });
    const result = await run.result();
    const content = JSON.parse(result.transcript.find((m) => m['tool_call_id'] === 'c1')!['content'] as string);
    expect(content.error).toMatch(
      /^Tool 'selfref_compact' failed during execution or result parsing with arguments .*: goal must be a non-empty string$/,
    );
    world.fake.assertDone();
  });

  it('fork: a child workflow starts from the parent context, calls a tool, and its answer returns as the fork result', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents,
      fake: {
        script: [
          callTools([{ id: 'fk', name: 'selfref_fork', arguments: '{"message": "compute 2 + 2"}' }]),
          callTools([{ id: 'child_add', name: 'add', arguments: '{"a": 2, "b": 2}' }]),
          reply('4'),
          reply('The fork says 4.'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'delegate the sum' });
    const result = await run.result();
    expect(result.answer).toBe('The fork says 4.');
    const childFirst = world.fake.requests[1]!.body.messages;
    expect(childFirst.slice(1)).toEqual([
      { role: 'user', content: 'delegate the sum' },
      {
        role: 'user',
        content:
          'You are now already a forked subagent. So you have no need to care about whether the previous fork was correct or not, because it has already succeeded. And now, the only thing you are required to do is:\n\ncompute 2 + 2\n\nFollow the instructions above to finish this task.',
      },
    ]);
    const forkResult = JSON.parse(result.transcript.find((m) => m['tool_call_id'] === 'fk')!['content'] as string);
    const childId = `${run.workflowId}::fork::1`;
    expect(forkResult).toEqual({
      fork_id: 'fork_1',
      parent_fork_id: null,
      depth: 1,
      source_memory_key: run.workflowId,
      memory_key: childId,
      status: 'completed',
      response: '4',
      result: '4',
      history_count: 6,
      history_included: false,
    });
    // The child's result leaves its transcript out (the parent uses its length); its query still answers.
    const child = await world.client.run(childId).result();
    expect([child.transcript, child.transcript_omitted, child.transcript_length]).toEqual([[], true, 6]);
    const childTranscript = await world.client.run(childId).transcript();
    expect(childTranscript).toHaveLength(6);
    expect(childTranscript.find((m) => m['role'] === 'tool')).toEqual({
      role: 'tool',
      tool_call_id: 'child_add',
      content: '4',
    });
    validateToolLinkage(childTranscript);
    const customs = (await run.status()).events
      .filter((event) => event.event_type === 'custom_event')
      .map((event) => ('event_name' in event ? event.event_name : ''));
    expect(customs).toEqual(['selfref_fork_start', 'selfref_fork_end']);
    world.fake.assertDone();
    await recordHistory(run, 'selfref-fork');
  });

  it('aborting a parent aborts its running child; both transcripts stay valid', async ({ startWorld }) => {
    const world = await startWorld({
      agents,
      fake: {
        script: [
          callTools([{ id: 'fk', name: 'selfref_fork', arguments: '{"message": "think forever"}' }]),
          { kind: 'hang', chunks: ['thinking '] },
        ],
      },
    });
    const run = await world.client.start({ agent: 'memo', input: 'delegate' });
    await eventOf(run, 'custom_event');
    await world.fake.waitForRequests(2);
    await replyReceived(world.client.run(`${run.workflowId}::fork::1`), 'thinking '.length);
    await run.abort('stop everything');
    const parent = await run.result();
    expect(parent.status).toBe('aborted');
    expect(parent.transcript.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'fk',
      content: '<Tool execution cancelled by user. Tool: selfref_fork. Reason: stop everything>',
    });
    validateToolLinkage(parent.transcript);
    const child = await world.client.run(`${run.workflowId}::fork::1`).result();
    expect(child.status).toBe('aborted');
    const childTranscript = await world.client.run(`${run.workflowId}::fork::1`).transcript();
    expect(childTranscript.at(-1)).toEqual({
      role: 'assistant',
      content: 'thinking <Truncated due to cancel from user. Reason: stop everything>',
    });
    validateToolLinkage(childTranscript);
    world.fake.assertDone();
  });

  it('a fork beyond the depth limit gets an error result', async ({ startWorld }) => {
    const world = await startWorld({
      agents: [{ ...memo, limits: { max_fork_depth: 0 } }],
      fake: {
        script: [callTools([{ id: 'fk', name: 'selfref_fork', arguments: '{"message": "x"}' }]), reply('no fork')],
      },
    });
    const result = await (await world.client.start({ agent: 'memo', input: 'fork' })).result();
    expect(JSON.parse(result.transcript.find((m) => m['tool_call_id'] === 'fk')!['content'] as string).error).toMatch(
      /fork depth limit 0 reached$/,
    );
    world.fake.assertDone();
  });
});
