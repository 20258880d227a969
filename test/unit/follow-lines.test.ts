import { describe, expect, it } from 'vitest';
import { describeEvent } from '../../src/client/follow';
import { lastTurnFailure, type LoggedRunEvent } from '../../src/runtime';

const at = { seq: 1, run_id: 'run-1', iteration: 3, timestamp: '2026-12-04T00:00:00.000Z' };

describe("what 'follow' prints about compactions and budgets", () => {
  it('a compaction: why it started, and what it did', () => {
    const base = { reason: 'proactive' as const, tokens_before: 9800, window_tokens: 12000 };
    expect(describeEvent({ ...at, event_type: 'context_compaction_start', ...base, target_tokens: 5760 })).toBe(
      '  compacting the context (proactive): about 9800 tokens of a 12000-token window',
    );
    const end: LoggedRunEvent = {
      ...at,
      event_type: 'context_compaction_end',
      ...base,
      tokens_after: 3100,
      cleared_tool_results: 5,
      cleared_chars: 20480,
      summarized_messages: 12,
      shortened_messages: 0,
      summary_calls: 1,
      usage: { prompt_tokens: 1200, completion_tokens: 90, total_tokens: 1290 },
    };
    expect(describeEvent(end)).toBe(
      '  compacted the context: 9800 -> 3100 tokens (5 old tool result(s) cleared, 12 message(s) summarized in 1 call(s) using 1290 tokens)',
    );
    expect(describeEvent({ ...end, aborted: true })).toBe(
      '  compaction stopped by the abort; the context is as it was',
    );
  });

  it('a budget: reached (stopping or waiting) and extended', () => {
    const reached = {
      ...at,
      event_type: 'budget_exhausted' as const,
      exceeded: ['max_llm_calls' as const],
      limit: { max_llm_calls: 2 },
      spent: { max_llm_calls: 2 },
    };
    expect(describeEvent({ ...reached, waiting: true })).toBe(
      "  budget reached (max_llm_calls): waiting for 'patchloop budget extend'",
    );
    expect(describeEvent({ ...reached, waiting: false })).toBe(
      '  budget reached (max_llm_calls): the run stops before its next step',
    );
    expect(
      describeEvent({ ...at, event_type: 'budget_extended', extension: { llm_calls: 3 }, limit: { max_llm_calls: 5 } }),
    ).toBe('  budget extended: {"llm_calls":3}');
  });

  it('names what listing MCP tools again at continue-as-new changed, or why it kept the tools', () => {
    const relisted = { ...at, event_type: 'mcp_tools_relisted' as const, added: [], removed: [], changed: [] };
    expect(describeEvent(relisted)).toBe('  MCP tools listed again: no change');
    expect(describeEvent({ ...relisted, added: ['a', 'b'], removed: ['c'], changed: ['d'] })).toBe(
      '  MCP tools listed again: added a, b; removed c; changed d',
    );
    expect(describeEvent({ ...relisted, problem: "MCP server 'x' did not start" })).toBe(
      "  MCP tools not listed again (the run keeps its tools): MCP server 'x' did not start",
    );
  });

  it('names a handoff: from which agent to which, and why', () => {
    const handoff = {
      ...at,
      event_type: 'agent_handoff' as const,
      from: 'triage',
      to: 'billing',
      tool_name: 'transfer_to_billing',
      tool_call_id: 'call_1',
    };
    expect(describeEvent(handoff)).toBe('handoff: triage -> billing');
    expect(describeEvent({ ...handoff, reason: 'an invoice question' })).toBe(
      'handoff: triage -> billing (an invoice question)',
    );
  });

  it("says a session's failed turn with its error, and that its message stays", () => {
    const failed: LoggedRunEvent = {
      ...at,
      event_type: 'turn_failed',
      error_type: 'ProviderRejected',
      message: 'the model call failed: 400 flagged by the content filter',
    };
    expect(describeEvent(failed)).toBe(
      "turn failed: ProviderRejected: the model call failed: 400 flagged by the content filter (the message stays in the session's transcript; send another to go on)",
    );
    // The session's status names its latest turn's failure from the same events, until a turn ends well.
    const ended: LoggedRunEvent = {
      ...at,
      event_type: 'react_end',
      status: 'completed',
      final_response: 'hi',
      total_iterations: 1,
      total_llm_calls: 1,
      total_tool_calls: 0,
      total_token_usage: null,
    };
    expect(lastTurnFailure([ended, failed])).toEqual({ type: 'ProviderRejected', message: failed.message });
    expect(lastTurnFailure([failed, ended])).toBeNull();
    expect(lastTurnFailure([])).toBeNull();
  });
});
