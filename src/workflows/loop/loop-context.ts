import type { JsonObject, PromptContract } from '../../context';
import type { AgentSpec, BudgetLimit, LlmPhaseResult } from '../../runtime';
import type { PendingHandoff } from './handoffs';
import type { PhaseActivities } from './phase-activities';
import type { Run } from '../run/run-state';
import type { RecordedTools } from '../batch/recorded-tools';

export interface LoopOptions {
  transport: 'query' | 'inline';
  /** Budget of tool calls per turn (spec 7.5); null is unlimited. */
  maxToolCalls: number | null;
  /**
   * Whether queued user messages join this turn at its compile boundaries (a run), or wait for turns of
   * their own (a session).
   */
  foldInbox: boolean;
  /** Overrides the chat-agent prompt contract (typed functions use the function preset). */
  contract?: PromptContract;
  /** A typed LLM function whose output schema checks final replies. */
  outputCheck?: string;
  /**
   * Whether the run should continue as new now (a run that can: `agentRun`): checked while a batch waits
   * for its sub-agents only, so a long child does not hold the parent's history growing.
   */
  continueAsNewDue?: () => boolean;
  /**
   * Called before each iteration's model request (after its boundary, before its patches are committed),
   * with the turn's tool calls so far: the state a fork of that iteration starts from.
   */
  beforeRequest?: (iteration: number, toolCalls: number) => void;
  /** Tool calls answered from a recorded run (`tool_recordings`): no fast tools run with the reply then. */
  recordedTools?: RecordedTools;
}

/** What the steps of a turn share: the durable run, the agent and how its requests are built. */
export interface LoopContext {
  run: Run;
  agent: AgentSpec;
  options: LoopOptions;
  contract: PromptContract;
  /** The agent's tools in the provider's shape. */
  tools: JsonObject[];
  /** The agent's tools a model call may run with its reply (`fusableTools`). */
  fastTools: string[];
  activities: PhaseActivities;
  /** A handoff the last batch accepted: it takes effect at the next compile boundary (`settleHandoff`). */
  handoff?: PendingHandoff;
}

export interface LlmMode {
  withTools: boolean;
  stream: boolean;
  /**
   * Tool calls the turn's budget has left (null: no budget) when the phase may run the reply's fast tools
   * itself (`fast_tools`); absent: it may not.
   */
  toolCallsLeft?: number | null;
}

export interface TurnResult {
  status: 'completed' | 'aborted' | 'budget_exhausted';
  /** With `budget_exhausted`: the limits the next step would have passed. */
  exceeded?: BudgetLimit[];
  /** The final answer; null when aborted. */
  answer: string | null;
  /** Spec 7.10: the text of the turn's last LLM call (the partial text after an abort). */
  finalResponse: string;
  /** For typed functions: the final reply checked against the output schema. */
  outputCheck?: LlmPhaseResult['output_check'];
}
