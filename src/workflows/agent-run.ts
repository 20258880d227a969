import {
  allHandlersFinished,
  condition,
  ContinueAsNew,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { asMessages, cloneJson, validateToolLinkage, type Message } from '../context';
import {
  AgentRunInput,
  AgentSpec,
  RUN_STATE_SCHEMA_VERSION,
  RUN_STATE_SCHEMA_VERSIONS,
  seedTranscript,
  type AgentRunResult,
  type AgentRunState,
  type RunEvent,
} from '../runtime';
import { AgentLoop, type TurnProgress } from './agent-loop';
import { carriedInputFits, continueAsNewDue, recentEvents, restoreEvents } from './continue-as-new';
import { nextRequestQuery, failure, FailureType } from '../common';
import { parseWorkflowInput } from './input';
import { asRunFailure, withUnprocessedMessages } from './failures';
import { checkedResult } from './payload-budget';
import { registerRunHandlers } from './handlers';
import { applyAgentLimits, commit, emit, newRun, runOrigin, unprocessedMessages, type Run } from './run-state';
import { sinks } from './sinks';
import { keepVisible } from './visibility';

/**
 * A durable ReAct run (spec section 7). Each iteration commits pending patches, compiles the request
 * with the pure core, runs the LLM phase and, when the model asked for tools, the tool batch; both are
 * activities that return patches. An `abort` signal turns into abort patches, so the transcript stays
 * valid however the run ends. At an iteration boundary, when Temporal suggests it or the history
 * passes `continue_as_new`, the run continues as new carrying its whole state: a run of any length.
 */
export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const input = parseRunInput(rawInput);
  const run = newRun(input.agent, workflowInfo().workflowId);
  if (input.fork) run.origin = runOrigin(run.memoryKey, input.fork);
  // Restore before any handler runs: signals and updates buffered for this run land in the carried inbox.
  if (input.state) restoreRun(run, input.state);
  const chain = { continued: input.state?.continued ?? 0, skipped: false, stepsAtStart: steps(run) };
  registerRunHandlers(run, () => ({ continued_as_new: chain.continued }));
  try {
    const agent = input.state ? input.state.agent : await resolveAgent(input.agent);
    run.selfref = agent.selfref;
    applyAgentLimits(run, agent.limits);
    run.visibility.enabled = agent.search_attributes === true;
    keepVisible(run, true);
    if (input.fork) {
      run.forkDepth = input.fork.depth;
      run.forkId = input.fork.fork_id;
    }
    if (!input.state) seedRun(run, agent, input);
    const loop = new AgentLoop(run, agent, {
      transport: input.request_transport,
      maxToolCalls: input.max_tool_calls !== undefined ? input.max_tool_calls : agent.max_tool_calls,
      foldInbox: true,
    });
    setHandler(nextRequestQuery, () => loop.previewRequest());
    const turn = await loop.turn(
      (progress) => continueIfDue(run, input, agent, progress, chain),
      input.state
        ? {
            toolCalls: input.state.turn_tool_calls,
            ...(input.state.awaiting_batch ? { awaiting: input.state.awaiting_batch } : {}),
          }
        : undefined,
    );
    run.state = turn.status;
    keepVisible(run);
    const unprocessed = unprocessedMessages(run);
    const result = checkedResult(
      agent,
      {
        status: turn.status,
        answer: turn.answer,
        // A fork child returns only what its parent uses; its transcript stays its own (spec 6.6).
        ...(input.fork
          ? { transcript: [], transcript_length: run.transcript.length, transcript_omitted: true as const }
          : { transcript: cloneJson(run.transcript) }),
        usage: run.usage,
        ...(turn.status === 'aborted' ? { abort_reason: run.abort.reason } : {}),
        ...(unprocessed.length > 0 ? { unprocessed_messages: unprocessed } : {}),
      } satisfies AgentRunResult,
      "run's result",
    );
    sinks.patchloop.runEnded({ status: turn.status, result, llmCalls: run.llmCalls, toolCalls: run.toolCalls });
    return result;
  } catch (error) {
    if (error instanceof ContinueAsNew) throw error;
    run.state = 'failed';
    keepVisible(run);
    throw withUnprocessedMessages(asRunFailure(error), unprocessedMessages(run));
  }
}

/** The input of a run, carried state included (its schema version checked first). */
export function parseRunInput(raw: unknown): AgentRunInput {
  const version = (raw as { state?: { schema_version?: unknown } } | null)?.state?.schema_version;
  if (version !== undefined && !RUN_STATE_SCHEMA_VERSIONS.includes(version as number)) {
    throw failure(
      FailureType.UnsupportedStateVersion,
      `agentRun state schema_version ${String(version)} is not supported by this worker (supports ${RUN_STATE_SCHEMA_VERSIONS.join(', ')})`,
    );
  }
  return parseWorkflowInput(AgentRunInput, raw, 'agentRun');
}

/** The first run of a chain: the seed context, or a fork child's parent context (spec 6.6 step 3). */
function seedRun(run: Run, agent: AgentSpec, input: AgentRunInput): void {
  if (input.fork) run.pending = [{ type: 'ContextReplaceMutation', messages: input.fork.context }];
  else commit(run, [{ type: 'ContextReplaceMutation', messages: checkedSeed(agent, input) }]);
  emit(run, {
    event_type: 'react_start',
    agent: agent.name,
    user_task_prompt: input.input,
    available_tools: agent.tools,
  });
}

/**
 * At an iteration boundary: continue as new when due, with no abort pending and every handler done.
 * The next run carries the whole state and resumes the turn exactly here, so every request the model
 * receives is the one it would have received without the boundary.
 */
async function continueIfDue(
  run: Run,
  input: AgentRunInput,
  agent: AgentSpec,
  progress: TurnProgress,
  chain: { continued: number; skipped: boolean; stepsAtStart: number },
): Promise<void> {
  // A run continues only after a step of its own: a carried state larger than the policy cannot loop.
  if (run.abort.requested || steps(run) === chain.stepsAtStart || !continueAsNewDue(input.continue_as_new)) return;
  // Runs started before runs could continue as new replay as they ran.
  if (!patched('agent-run-continue-as-new')) return;
  await condition(allHandlersFinished);
  if (run.abort.requested) return;
  const info = workflowInfo();
  const next = (): AgentRunInput => ({
    ...withoutSeed(input),
    state: carriedState(run, agent, progress, chain.continued + 1),
  });
  if (!carriedInputFits(run, agent, next(), chain)) return;
  emit(run, { event_type: 'continued_as_new', history_events: info.historyLength, history_bytes: info.historySize });
  await continueAsNew<typeof agentRun>(next());
}

/** Steps a run made: LLM calls and approval decisions (a wait for decisions may continue as new too). */
function steps(run: Run): number {
  return run.llmCalls + run.approvalDecisions;
}

/** The input without what the carried transcript already holds (the seed history, a fork's context). */
function withoutSeed(input: AgentRunInput): AgentRunInput {
  const { history: _history, ...rest } = input;
  return { ...rest, ...(input.fork ? { fork: { ...input.fork, context: [] } } : {}) };
}

function carriedState(run: Run, agent: AgentSpec, progress: TurnProgress, continued: number): AgentRunState {
  const recent = recentEvents(run);
  return {
    schema_version: RUN_STATE_SCHEMA_VERSION,
    agent,
    transcript: run.transcript,
    pending: run.pending,
    inbox: run.inbox,
    next_inbox_id: run.nextInboxId,
    selfref_queue: run.selfrefQueue,
    iteration: run.iteration,
    llm_calls: run.llmCalls,
    tool_calls: run.toolCalls,
    turn_tool_calls: progress.toolCalls,
    usage: run.usage,
    fork_count: run.forkCount,
    event_seq: run.eventSeq,
    // The events of the window that do not travel count as dropped too.
    events_dropped: run.eventsDropped + run.events.length - recent.length,
    recent_events: recent,
    rejected_inputs: run.rejectedInputs,
    continued,
    ...(progress.awaiting ? { awaiting_batch: progress.awaiting } : {}),
  };
}

function restoreRun(run: Run, state: AgentRunState): void {
  run.selfref = state.agent.selfref;
  run.transcript = state.transcript;
  run.pending = state.pending;
  run.inbox = state.inbox;
  run.nextInboxId = state.next_inbox_id;
  run.selfrefQueue = state.selfref_queue;
  run.iteration = state.iteration;
  run.llmCalls = state.llm_calls;
  run.toolCalls = state.tool_calls;
  run.usage = state.usage;
  run.forkCount = state.fork_count;
  run.rejectedInputs = state.rejected_inputs;
  // Before any handler runs: a decision buffered for this run is validated against these records.
  run.approvals = state.awaiting_batch?.approvals ?? [];
  restoreEvents(run, state.recent_events as RunEvent[], state.event_seq, state.events_dropped);
  // The snapshot is derived from the transcript: recompute it rather than carry it.
  commit(run, []);
}

export function checkedSeed(
  agent: AgentSpec,
  input: { history?: AgentRunInput['history']; input: string },
  workflow = 'agentRun',
): Message[] {
  const seed = seedTranscript(agent.instructions, asMessages(input.history ?? []), input.input);
  try {
    validateToolLinkage(seed);
  } catch (error) {
    throw failure(FailureType.InvalidRunInput, `invalid ${workflow} input: history: ${(error as Error).message}`);
  }
  return seed;
}

export async function resolveAgent(name: string): Promise<AgentSpec> {
  const { describeAgent } = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    summary: `resolve agent ${name}`,
    retry: { maximumAttempts: 5, nonRetryableErrorTypes: [FailureType.UnknownAgent] },
  });
  // Parsed again here: a spec recorded by an older worker lacks newer limits, which take their defaults.
  return AgentSpec.parse(await describeAgent(name));
}
