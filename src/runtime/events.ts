import type { JsonObject, JsonValue } from '../context';
import type { PendingApproval } from './approvals';
import type { TokenUsage } from './usage';
import type { BudgetExtension, BudgetLimit } from './budget';

/**
 * The coarse event log a run keeps in its state (spec 7.8 vocabulary, compact fields: no message
 * lists). `seq` counts from 1 per run and is stable under replay.
 */
export type RunEvent = RunEventBody & {
  seq: number;
  run_id: string;
  iteration: number;
  timestamp: string;
  /**
   * Spec 7.8's common fields the `events` and `status` queries add to every event (the log does not
   * repeat them): where it comes from, the agent's name, the run's trace id (its workflow id), `extra`.
   */
  origin?: EventOrigin;
  func_name?: string;
  trace_id?: string;
  extra?: JsonObject;
};

/**
 * Spec 7.8's origin of an event. `session_id` is the call tree's root (the root run's or the session's
 * workflow id), `agent_call_id` the run's own workflow id and `parent_agent_call_id` its parent's;
 * `event_seq` is the event's `seq`. A fork child's events carry its fork fields, so a stream that merges
 * a tree's events (`followRun`) keeps every origin, however deep.
 */
export type EventOrigin = {
  session_id: string;
  agent_call_id: string;
  event_seq: number;
  parent_agent_call_id: string | null;
  fork_id: string | null;
  fork_depth: number;
  /** Kept for the spec's shape; the reference defines but never sets it. */
  fork_seq: number | null;
  selfref_instance_id: string | null;
  source_memory_key: string | null;
  memory_key: string;
  tool_name: string | null;
  tool_call_id: string | null;
};

/** The origin fields one run shares across its events. */
export type RunOrigin = Omit<EventOrigin, 'event_seq' | 'tool_name' | 'tool_call_id'>;

/** Answer of the `events` query: events after an offset, and the offset to ask from next. */
export interface EventPage {
  events: RunEvent[];
  next_after: number;
  state: ReportedState;
  /** Events that already left the run's in-memory window (a follower that fell that far behind misses them). */
  events_dropped: number;
}

export type ToolCallRef = { id: string; name: string };

export type RunEventBody =
  | { event_type: 'react_start'; agent: string; user_task_prompt: string; available_tools: string[] }
  | { event_type: 'react_iteration_start' }
  /** `content` is the first 1,024 characters of a longer message, whose length `content_chars` gives. */
  | { event_type: 'user_message_received'; content: string; content_chars?: number }
  | { event_type: 'llm_call_start'; llm_call: number; stream: boolean; message_count: number; with_tools: boolean }
  | {
      event_type: 'llm_call_end';
      llm_call: number;
      /** `refused`: the provider answered context_length_exceeded; the run compacts and calls again. */
      outcome: 'completed' | 'aborted' | 'skipped' | 'refused';
      /** The reply's text; its first 16 KB when longer (`content_chars` then gives its length). */
      content: string;
      content_chars?: number;
      tool_calls: ToolCallRef[];
      usage: TokenUsage | null;
      duration_ms: number;
      /** Spec 7.8's name for the duration, in seconds. */
      execution_time: number;
    }
  | { event_type: 'tool_calls_batch_start'; batch_size: number; tool_calls: ToolCallRef[] }
  | { event_type: 'tool_call_start'; tool_name: string; tool_call_id: string; arguments: JsonObject }
  | {
      event_type: 'tool_call_end';
      tool_name: string;
      tool_call_id: string;
      /** The result parsed as JSON; for results over 1 KB, the first 1,024 characters of the content. */
      result: JsonValue;
      result_truncated?: true;
      success: true;
      duration_ms: number;
      execution_time: number;
    }
  | {
      event_type: 'tool_call_error';
      tool_name: string;
      tool_call_id: string;
      error: string;
      /** Spec 7.8's names: the message again, and `ToolTimeout` or `ToolError`. */
      error_message: string;
      error_type: string;
      duration_ms: number;
      execution_time: number;
    }
  | {
      event_type: 'tool_calls_batch_end';
      batch_size: number;
      success_count: number;
      error_count: number;
      cancelled: string[];
      /** Seconds from the calls' start to the batch's end (workflow time). */
      total_execution_time: number;
    }
  | { event_type: 'react_iteration_end'; tool_calls_count: number }
  /** A gated call waits for the `approve` update; nothing of its batch runs until every gated call is decided. */
  | ({ event_type: 'approval_requested' } & PendingApproval)
  | {
      event_type: 'approval_decided';
      tool_call_id: string;
      tool_name: string;
      approved: boolean;
      reason?: string;
      /** `timeout`: `limits.approval_timeout_seconds` passed undecided. */
      by: 'update' | 'timeout';
    }
  | { event_type: 'custom_event'; event_name: string; data: JsonObject; tool_name: string; tool_call_id: string }
  /** `to_current_build`: Worker Versioning's current build changed, and the next run starts on it. */
  | { event_type: 'continued_as_new'; history_events: number; history_bytes: number; to_current_build?: true }
  /** A sub-agent call started a child run (`child_workflow_id`), or found the one it started before. */
  | {
      event_type: 'subagent_started';
      tool_name: string;
      tool_call_id: string;
      agent: string;
      child_workflow_id: string;
      depth: number;
    }
  /**
   * A sub-agent call ended: its child run `completed` (its answer is the call's result), `failed`, was
   * `aborted` alone, ran out of budget (`budget_exhausted`), or was `cancelled` with its caller.
   */
  | {
      event_type: 'subagent_finished';
      tool_name: string;
      tool_call_id: string;
      agent: string;
      child_workflow_id: string;
      status: 'completed' | 'failed' | 'aborted' | 'budget_exhausted' | 'cancelled';
      usage: TokenUsage | null;
      error?: string;
    }
  /**
   * A handoff (`transfer_to_<agent>`) took effect: from here on the run's active agent is `to` (its
   * instructions, tools and model), on the same transcript. `tool_call_id` is the call that asked for it.
   */
  | {
      event_type: 'agent_handoff';
      from: string;
      to: string;
      tool_name: string;
      tool_call_id: string;
      reason?: string;
    }
  /**
   * After continue-as-new the agent's MCP servers were asked for their tools again: what the model is
   * offered from now on differs by these names. With `problem` the run keeps the tools it had.
   */
  | { event_type: 'mcp_tools_relisted'; added: string[]; removed: string[]; changed: string[]; problem?: string }
  /**
   * The run shrinks its context before a call: `proactive` when the request would pass `compact_at` of
   * the window, `reactive` after the provider answered `context_length_exceeded`.
   */
  | {
      event_type: 'context_compaction_start';
      reason: 'proactive' | 'reactive';
      tokens_before: number;
      window_tokens: number;
      target_tokens: number;
    }
  | {
      event_type: 'context_compaction_end';
      reason: 'proactive' | 'reactive';
      tokens_before: number;
      tokens_after: number;
      window_tokens: number;
      cleared_tool_results: number;
      cleared_chars: number;
      summarized_messages: number;
      shortened_messages: number;
      /** Model calls that wrote the summary (0 when clearing was enough), and their usage. */
      summary_calls: number;
      usage: TokenUsage | null;
      /** Set when an abort stopped the compaction: the context was left as it was. */
      aborted?: true;
      /** Set when the budget could not afford a summary call: the context was left as it was. */
      budget_exhausted?: true;
    }
  /**
   * The next step would pass a limit of the run's budget: the run ends (`budget_exhausted`) or, with
   * `on_exhausted: "ask"`, waits for `extend_budget` (`waiting`).
   */
  | {
      event_type: 'budget_exhausted';
      exceeded: BudgetLimit[];
      waiting: boolean;
      limit: Record<string, number | null>;
      spent: Record<string, number>;
    }
  | { event_type: 'budget_extended'; extension: BudgetExtension; limit: Record<string, number | null> }
  /** A signal or update the run refused (bad shape, too large, queue full): recorded, never silent. */
  | { event_type: 'input_rejected'; input: string; via: 'signal' | 'update'; reason: string }
  /** A session turn failed (the provider rejected it, ...): the turn is rolled back and the session goes on. */
  | { event_type: 'turn_failed'; error_type: string; message: string }
  | {
      event_type: 'react_end';
      status: 'completed' | 'aborted' | 'budget_exhausted';
      final_response: string;
      total_iterations: number;
      total_llm_calls: number;
      total_tool_calls: number;
      total_token_usage: TokenUsage | null;
      aborted?: true;
      abort_reason?: string;
    };

export type RunEventType = RunEventBody['event_type'];

export type RunState = 'running' | 'completed' | 'aborted' | 'failed' | 'budget_exhausted';

/**
 * The state queries report: a running run whose batch waits for decisions is `awaiting_approval`; one
 * that waits for `extend_budget` is `awaiting_budget`.
 */
export type ReportedState = RunState | 'awaiting_approval' | 'awaiting_budget';

/** Answer of the `status` query. */
export interface RunStatus {
  state: ReportedState;
  /** Gated tool calls waiting for a decision (the `approve` update), in the batch's order. */
  pending_approvals: PendingApproval[];
  /** The active agent: the one the run started with, or the last one a handoff passed it to. */
  agent: string;
  /** The agent the run (or session) started with: `agent` differs from it after a handoff. */
  started_agent?: string;
  iteration: number;
  llm_calls: number;
  tool_calls: number;
  usage: TokenUsage | null;
  /** The context's size (the latest request, estimated) against the model's window, and compactions so far. */
  context: { tokens: number; window_tokens: number | null; compact_at_tokens: number | null; compactions: number };
  abort_requested: boolean;
  abort_reason: string;
  queued_user_messages: number;
  /** The run's budget (limits with extensions, what was spent); null when it has no limit. */
  budget: { limit: Record<string, number | null>; spent: Record<string, number>; awaiting: string[] | null } | null;
  /** Signals and updates refused so far (each also logged as an `input_rejected` event). */
  rejected_inputs: number;
  /** Temporal's own figures, refreshed at each workflow task. */
  history: { events: number; bytes: number };
  /** A page of the event log: events with `seq > after`, at most `limit` (default 500) and about 1 MB. */
  events: RunEvent[];
  /** Where the next page starts (`after` of the next call). */
  next_after: number;
  events_dropped: number;
}
