import { allHandlersFinished, condition, ContinueAsNew, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import { cloneJson } from '../context';
import {
  AgentRunInput,
  fittedResult,
  RUN_STATE_SCHEMA_VERSION,
  RUN_STATE_SCHEMA_VERSIONS,
  type AgentRunResult,
  type AgentSpec,
  unprocessedEvents,
  withInherited,
  type AgentRunState,
} from '../runtime';
import { AgentLoop, type TurnProgress } from './loop/agent-loop';
import { admittedMessage } from './loop/guardrail-step';
import { checksAt } from './loop/guardrail-checks';
import { phaseActivities } from './loop/phase-activities';
import { carryRun, restoreRun } from './run/carried-run';
import {
  carriedInputFits,
  continueAsNewDue,
  continueAsNewOnCurrentBuild,
  newBuildCurrent,
} from './run/continue-as-new';
import { nextRequestQuery } from '../common';
import { parseVersionedInput } from './run/input';
import { asRunFailure, withSpending, withUnprocessedMessages } from './run/failures';
import { checkedSeed, openRun } from './run/open-run';
import { checkedResult } from './run/payload-budget';
import { registerRunHandlers } from './handlers/run-handlers';
import { relayDecisionsUp } from './handlers/tree-decisions';
import {
  abortChildren,
  deliverChildSignals,
  emit,
  newRun,
  runOrigin,
  unprocessedMessages,
  type Run,
} from './run/run-state';
import { sinks } from './sinks';
import { forkCapture, forkedEvent, forkStart, forkState, type ForkStart } from './run/fork-state';
import { keepVisible } from './run/visibility';
import { runEndNotice } from './run/run-end-notify';
import { hasBudget, resultBudget, runSpending } from './loop/budget-gate';

/**
 * A durable ReAct run (spec section 7). Each iteration commits pending patches, compiles the request
 * with the pure core, runs the LLM phase and, when the model asked for tools, the tool batch; both are
 * activities that return patches. An `abort` signal turns into abort patches, so the transcript stays
 * valid however the run ends. At an iteration boundary, when Temporal suggests it or the history
 * passes `continue_as_new`, the run continues as new carrying its whole state: a run of any length.
 */
export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const parsed = parseRunInput(rawInput);
  const run = newRun(parsed.agent, workflowInfo().workflowId);
  placeInTree(run, parsed);
  // A fork reads its state first (an activity): signals sent meanwhile wait for its handlers; updates and
  // queries are refused until it has read it (seconds; `rewind` waits for that before it aborts). It
  // keeps the original's own overrides (budget, context, tool calls) where its input has none.
  const forked = await forkStarting(run, parsed);
  // Checked as the input is: the original's values as it was given them.
  const input = forked ? parseRunInput(withInherited(rawInput as Record<string, unknown>, forked.inherited)) : parsed;
  const state = input.state ?? forked?.state;
  // Restore before any handler runs: signals and updates buffered for this run land in the carried inbox.
  const position = state ? restoreRun(run, state) : undefined;
  const chain = { continued: state?.continued ?? 0, skipped: false, stepsAtStart: steps(run) };
  registerRunHandlers(run, () => ({ continued_as_new: chain.continued, started_agent: input.agent }));
  // A sub-agent run tells its caller which of its calls wait for decisions.
  if (input.caller) relayDecisionsUp(run, input.caller);
  const notice = runEndNotice(input);
  try {
    if (input.fork_from && !input.state) emit(run, forkedEvent(input.fork_from));
    const agent = await openRun(run, { ...input, state }, (resolved) =>
      // A fork child starts from its parent's context (spec 6.6 step 3), folded at its first compile.
      input.fork
        ? { context: input.fork.context, prompt: input.input, pending: true }
        : checksAt(resolved, 'input')
          ? screenedSeed(run, resolved, input)
          : { context: checkedSeed(resolved, input), prompt: input.input },
    );
    notice.agentResolved(agent);
    const loop = runLoop(run, agent, input, chain.continued);
    setHandler(nextRequestQuery, () => loop.previewRequest());
    // The loop's agent is the active one (a handoff may have switched it): that is the one carried on.
    const turn = await loop.turn((progress) => continueIfDue(run, input, loop.agent, progress, chain), position);
    run.live.state = turn.status;
    keepVisible(run);
    const unprocessed = unprocessedMessages(run);
    const child = input.fork !== undefined || input.caller !== undefined;
    const whole = {
      status: turn.status,
      answer: turn.answer,
      // A fork or sub-agent child returns only what its parent uses; its transcript stays its own (spec 6.6).
      ...(child
        ? { transcript: [], transcript_length: run.durable.transcript.length, transcript_omitted: true as const }
        : { transcript: cloneJson(run.durable.transcript) }),
      usage: run.durable.usage,
      ...(turn.status === 'aborted' ? { abort_reason: run.live.abort.reason } : {}),
      ...(hasBudget(run) ? { budget: resultBudget(run, turn.exceeded ?? []) } : {}),
      ...(unprocessed.length > 0 ? { unprocessed_messages: unprocessed } : {}),
      ...(run.durable.held_events.length > 0 ? { unprocessed_events: unprocessedEvents(run.durable.held_events) } : {}),
    } satisfies AgentRunResult;
    // Any client reads the result without patchloop's data converter: it stays under the store's
    // threshold, leaving out a transcript (and an answer) too large for it (`transcriptPage` reads them).
    // A child's result is read by its parent run, whose worker has the store: it stays whole.
    const result = checkedResult(
      agent,
      child ? whole : fittedResult(whole, run.settings.readableBytes),
      "run's result",
    );
    sinks.patchloop.runEnded({
      status: turn.status,
      result,
      llmCalls: run.durable.llm_calls,
      toolCalls: run.durable.tool_calls,
    });
    await notice.ended(run, loop.agent.name, turn);
    return result;
  } catch (error) {
    if (error instanceof ContinueAsNew) throw error;
    run.live.state = 'failed';
    keepVisible(run);
    const failed = asRunFailure(error);
    // Children still running are abandoned by Temporal when this run closes: they are aborted instead.
    if (run.live.children.size > 0)
      await abortChildren(run, `the calling run failed: ${failed instanceof Error ? failed.message : String(failed)}`);
    // A sub-agent's caller charges what it spent before it failed.
    const charged = input.caller ? withSpending(failed, runSpending(run)) : failed;
    await notice.failed(run, failed);
    throw withUnprocessedMessages(charged, unprocessedMessages(run));
  }
}

/**
 * The seed of a run whose agent checks its input: the task as the input guardrails let it go on (a
 * rewrite is what the transcript, `react_start` and the model get); a block fails the run before any
 * model call.
 */
async function screenedSeed(run: Run, agent: AgentSpec, input: AgentRunInput) {
  const guard = { run, agent, activities: phaseActivities(agent), options: { transport: input.request_transport } };
  const prompt = await admittedMessage(guard, input.input, run.durable.iteration);
  return { context: checkedSeed(agent, { ...input, input: prompt }), prompt };
}

/** The input of a run, carried state included (its schema version checked first). */
export function parseRunInput(raw: unknown): AgentRunInput {
  return parseVersionedInput(AgentRunInput, raw, 'agentRun', RUN_STATE_SCHEMA_VERSIONS);
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
  progress: TurnProgress | (() => TurnProgress),
  chain: { continued: number; skipped: boolean; stepsAtStart: number },
): Promise<void> {
  // A run continues only after a step of its own: a carried state larger than the policy cannot loop.
  if (run.live.abort.requested || steps(run) === chain.stepsAtStart || !continueAsNewDue(input.continue_as_new)) return;
  // Runs started before runs could continue as new replay as they ran.
  if (!patched('agent-run-continue-as-new')) return;
  await condition(allHandlersFinished);
  // Signals to other runs (a sub-agent's report to its caller, an abort) still on their way are dropped
  // when the run closes.
  await deliverChildSignals(run);
  if (run.live.abort.requested) return;
  const info = workflowInfo();
  // How far the turn has come now: while sub-agents run, one may have finished during the waits above.
  const now = typeof progress === 'function' ? progress() : progress;
  const next = (): AgentRunInput => ({
    ...withoutSeed(input),
    state: { schema_version: RUN_STATE_SCHEMA_VERSION, ...carryRun(run, agent, now, chain.continued + 1) },
  });
  if (!carriedInputFits(run, agent, next(), chain)) return;
  emit(run, {
    event_type: 'continued_as_new',
    history_events: info.historyLength,
    history_bytes: info.historySize,
    ...(newBuildCurrent() ? { to_current_build: true as const } : {}),
  });
  // A chain moves to the current build here (a run on its own finishes on the build it started on).
  await continueAsNewOnCurrentBuild<typeof agentRun>()(next());
}

/** Where the run stands among others: a fork's origin and depth, a sub-agent's depth, its principal. */
function placeInTree(run: Run, input: AgentRunInput): void {
  if (input.fork) {
    run.settings.origin = runOrigin(run.settings.memoryKey, input.fork);
    run.settings.forkDepth = input.fork.depth;
    run.settings.forkId = input.fork.fork_id;
  }
  if (input.caller) run.settings.agentDepth = input.caller.depth;
  if (input.principal) run.settings.principal = input.principal;
}

/** The run's ReAct loop with its agent and the input's options. */
function runLoop(run: Run, agent: AgentSpec, input: AgentRunInput, continued: number): AgentLoop {
  const loop: AgentLoop = new AgentLoop(run, agent, {
    transport: input.request_transport,
    maxToolCalls: input.max_tool_calls !== undefined ? input.max_tool_calls : agent.max_tool_calls,
    foldInbox: true,
    continueAsNewDue: () => continueAsNewDue(input.continue_as_new),
    ...optional(
      'recordedTools',
      input.tool_recordings ? { recordings: input.tool_recordings, used: new Map<string, number>() } : undefined,
    ),
    ...optional(
      'beforeRequest',
      forkCapture(run, () => loop.agent, continued),
    ),
  });
  return loop;
}

/** A new fork's start (read by an activity); none for a run that is not one, or a fork's continued run. */
async function forkStarting(run: Run, input: AgentRunInput): Promise<ForkStart<AgentRunState> | undefined> {
  if (input.state || !input.fork_from) return undefined;
  const source = input.fork_from;
  return forkStart(run, () => forkState(source));
}

/** `{ [key]: value }` when the value is there, else nothing (for options that must be absent, not undefined). */
function optional<Key extends string, Value>(key: Key, value: Value | undefined): { [K in Key]?: Value } {
  return (value === undefined ? {} : { [key]: value }) as { [K in Key]?: Value };
}

/** Steps a run made: LLM calls and approval decisions (a wait for decisions may continue as new too). */
function steps(run: Run): number {
  return run.durable.llm_calls + run.live.approvalDecisions;
}

/** The input without what the carried transcript already holds (the seed history, a fork's context). */
function withoutSeed(input: AgentRunInput): AgentRunInput {
  const { history: _history, ...rest } = input;
  return { ...rest, ...(input.fork ? { fork: { ...input.fork, context: [] } } : {}) };
}
