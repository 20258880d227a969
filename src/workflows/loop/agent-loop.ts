import { patched } from '@temporalio/workflow';
import type { Mutation } from '../../context';
import {
  collectSelfRefMutations,
  decideNext,
  promptContractFor,
  fusableTools,
  providerTools,
  replyCallRequests,
  replyContent,
  type AgentSpec,
  type AwaitingBatch,
  type RunningBatch,
  type LlmPhaseResult,
  type ToolBatchResult,
  type ToolCallRequest,
} from '../../runtime';
import { affordable, BATCH_ESTIMATE, budgetFigures, type BudgetStop } from './budget-gate';
import { keepHandoffOf, settleHandoff, useAgent } from './handoffs';
import { buildRequest, llmStep } from './llm-step';
import { admittedMessage, decide } from './guardrail-step';
import { checksAt } from './guardrail-checks';
import type { LlmMode, LoopContext, LoopOptions, TurnResult } from './loop-context';
import { phaseActivities } from './phase-activities';
import * as events from '../run/run-events';
import { commit, emit, userMessageMutation, type Run } from '../run/run-state';
import { toolStep } from '../batch/tool-step';
import { keepVisible } from '../run/visibility';

export type { LoopOptions, TurnResult } from './loop-context';

/**
 * Where a run may continue as new: given how far the turn has come, or (while sub-agents run) a way to
 * tell it at the moment the run continues, after its handlers finished.
 */
export type Boundary = (progress: TurnProgress | (() => TurnProgress)) => Promise<void>;

/**
 * A tool batch the loop runs: as the model's reply asked for it (with the reply's patches, committed with
 * its results), or resumed as an earlier run of the chain carried it (`running`: its calls had started).
 */
type PendingBatch = Omit<AwaitingBatch, 'approvals'> & { resumed: boolean; prefetched?: ToolBatchResult };

/** How far a turn has come, at an iteration boundary or while a batch waits for approval decisions. */
export interface TurnProgress {
  /** Tool calls of this turn so far (the tool budget counts them), the waiting batch's not included. */
  toolCalls: number;
  /** The batch waiting for decisions, when the boundary is that wait. */
  awaiting?: AwaitingBatch;
}

/**
 * The ReAct loop (spec 7.3) over a durable `Run`: each iteration commits pending patches, compiles the
 * request with the pure core, runs the LLM phase, and carries out what `decideNext` says: finish, go on
 * with waiting messages, make the tool budget's last call, or run the tool batch.
 */
export class AgentLoop {
  private readonly loop: LoopContext;

  constructor(run: Run, agent: AgentSpec, options: LoopOptions) {
    const contract = options.contract ?? promptContractFor(agent);
    this.loop = {
      run,
      agent,
      options,
      contract,
      tools: providerTools(agent),
      fastTools: fusableTools(agent),
      activities: phaseActivities(agent),
    };
  }

  /** The active agent: the one the loop began with, or the last one a handoff passed the run to. */
  get agent(): AgentSpec {
    return this.loop.agent;
  }

  /** Goes on with this agent, the transcript untouched (a session turn rolled back to its checkpoint). */
  useAgent(agent: AgentSpec): void {
    if (agent !== this.loop.agent) useAgent(this.loop, agent);
  }

  /** The request the next LLM call would receive now, as JSON text (for byte-identity checks). */
  previewRequest(): string {
    return JSON.stringify(buildRequest(this.loop, this.mode()));
  }

  /**
   * One turn: until a final answer, the tool budget or an abort. `boundary` runs at every iteration
   * boundary after the first (where a run may continue as new: it throws then); `resume` carries on a
   * turn that an earlier run of the chain began.
   */
  async turn(boundary?: Boundary, resume?: TurnProgress): Promise<TurnResult> {
    const run = this.loop.run;
    let toolCalls = resume?.toolCalls ?? 0;
    // A batch that waited for decisions when the run continued as new: the wait goes on here.
    let waiting = resume?.awaiting;
    for (let first = resume === undefined; ; first = false) {
      // A handoff of the last batch takes effect here, before the boundary: a run that continues as new
      // there carries the new agent and the transcript that already names it.
      settleHandoff(this.loop);
      if (waiting) {
        const { approvals, ...batch } = waiting;
        waiting = undefined;
        // The records restored with the run (decisions may have landed on them already).
        if (run.live.approvals.length === 0) run.live.approvals = approvals;
        const ended = await this.runTools({ ...batch, resumed: true }, toolCalls, boundary);
        if (ended) return ended;
        toolCalls += batch.calls.length;
        continue;
      }
      if (!first && boundary) await boundary({ toolCalls });
      keepVisible(run);
      const it = run.durable.iteration;
      this.loop.options.beforeRequest?.(it, toolCalls);
      // Queued messages meet the input guardrails first (an agent without them folds them as before).
      const hooks = this.screensInbox() ? await this.screenedHooks(it) : this.collectHooks();
      commit(run, [...run.durable.pending.splice(0), ...hooks]);
      if (!first) emit(run, { event_type: 'react_iteration_start' });
      const llm = await llmStep(this.loop, this.mode(toolCalls), it);
      if (llm.outcome === 'budget_exhausted') return this.budgetExhausted(llm, it);
      const calls = replyCallRequests(llm);
      const step = decideNext({ ...this.facts(llm, calls), toolCalls, lastCall: false });
      switch (step.type) {
        case 'aborted':
          return this.finish(llm.mutations, 'aborted', replyContent(llm), it);
        case 'final':
          return { ...this.finish(llm.mutations, 'completed', replyContent(llm), it), ...outputCheckOf(llm) };
        case 'run_again': {
          // A message that arrived while the model answered is not dropped: the run goes on with it
          // (checked first by the input guardrails, if any: with none admitted, the answer is final).
          // Awaited only with input guardrails: other runs take the same steps as before them.
          const admitted = this.screensInbox() ? await this.screenedInbox(it) : undefined;
          commit(run, [...llm.mutations, ...(admitted ?? [])]);
          if (admitted?.length === 0) return this.finish([], 'completed', replyContent(llm), it);
          continue;
        }
        case 'limit_reached': {
          const ended = await this.lastCall(it, toolCalls);
          if (ended) return ended;
          continue;
        }
        case 'run_tools': {
          const batch = {
            iteration: it,
            calls: step.calls,
            llm_mutations: llm.mutations,
            reply_content: replyContent(llm),
            resumed: false,
            // The phase ran these fast calls already (`fast_tools`): their results come with the reply.
            ...(llm.tool_batch ? { prefetched: llm.tool_batch } : {}),
          };
          const ended = await this.runTools(batch, toolCalls, boundary);
          if (ended) return ended;
          toolCalls += step.calls.length;
          continue;
        }
        default: {
          const unreachable: never = step;
          throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
        }
      }
    }
  }

  /**
   * The batch of iteration `it`, committed with the reply that asked for it. While gated calls wait,
   * `boundary` is offered the waiting batch (a run may continue as new there). Returns the turn's
   * result when the batch was aborted.
   */
  private async runTools(batch: PendingBatch, toolCalls: number, boundary?: Boundary): Promise<TurnResult | undefined> {
    const run = this.loop.run;
    // A batch costs no tokens, but a limit already reached (wall time) stops it: the reply that asked
    // for it is dropped, as the tool budget drops one (7.5), so the transcript stays valid.
    // A batch carried while its sub-agents ran has started already: it finishes (its children would be left).
    const {
      iteration: it,
      calls,
      llm_mutations: llmMutations,
      reply_content: content,
      resumed,
      running,
      prefetched,
    } = batch;
    const stop = running ? undefined : await affordable(run, BATCH_ESTIMATE);
    if (stop && !run.live.abort.requested) return this.budgetExhausted(stop, it);
    const awaiting = (progress: Partial<AwaitingBatch> = {}): AwaitingBatch => ({
      iteration: it,
      calls,
      llm_mutations: llmMutations,
      reply_content: content,
      approvals: run.live.approvals,
      ...progress,
    });
    const onWait = boundary ? () => boundary({ toolCalls, awaiting: awaiting() }) : undefined;
    // While only sub-agents are still out, the run may continue as new too: it carries what the batch has.
    const due = this.loop.options.continueAsNewDue;
    const onChildWait =
      boundary && due
        ? {
            due,
            offer: (batch: () => RunningBatch) =>
              boundary(() => ({ toolCalls, awaiting: awaiting({ running: batch() }) })),
          }
        : undefined;
    const result = await toolStep(this.loop, calls, it + 1, {
      resumed,
      ...(onWait ? { onWait } : {}),
      ...(onChildWait ? { onChildWait } : {}),
      ...(running ? { running } : {}),
      ...(prefetched ? { prefetched } : {}),
    });
    keepHandoffOf(this.loop, result);
    run.durable.tool_calls += calls.length;
    run.durable.iteration = it + 1;
    if (result.outcome === 'aborted')
      return this.finish([...llmMutations, ...result.mutations], 'aborted', content, it + 1);
    commit(run, [...llmMutations, ...result.mutations]);
    emit(run, { event_type: 'react_iteration_end', tool_calls_count: calls.length });
    return undefined;
  }

  /**
   * Spec 7.5: the batch and its tool-call message are dropped; one last call without tools, not
   * streamed. Returns the turn's result, or undefined when messages that arrived meanwhile go on.
   */
  private async lastCall(it: number, toolCalls: number): Promise<TurnResult | undefined> {
    const run = this.loop.run;
    const last = await llmStep(this.loop, { withTools: false, stream: false }, it + 1);
    if (last.outcome === 'budget_exhausted') return this.budgetExhausted(last, it + 1);
    const step = decideNext({ ...this.facts(last, replyCallRequests(last)), toolCalls, lastCall: true });
    // Runs recorded before this ended here with the message unread: they replay as they ran.
    if (step.type === 'run_again' && patched('budget-call-goes-on-with-inbox')) {
      commit(run, last.mutations);
      run.durable.iteration = it + 2;
      return undefined;
    }
    // An abort of the last call commits its partial text, but react_end carries no abort mark (8.4).
    const status = step.type === 'aborted' ? 'aborted' : 'completed';
    return this.finish(last.mutations, status, replyContent(last), it + 1, status !== 'aborted');
  }

  private facts(llm: LlmPhaseResult, calls: ToolCallRequest[]) {
    const run = this.loop.run;
    return {
      outcome: llm.outcome,
      calls,
      maxToolCalls: this.loop.options.maxToolCalls,
      messagesWaiting: this.loop.options.foldInbox && run.durable.inbox.length > 0,
      abortRequested: run.live.abort.requested,
    };
  }

  /** With the turn's tool calls so far, the phase may run the reply's fast tools itself (within the budget). */
  private mode(toolCalls?: number): LlmMode {
    const mode = { withTools: this.loop.tools.length > 0, stream: this.loop.agent.stream };
    if (toolCalls === undefined) return mode;
    const budget = this.loop.options.maxToolCalls;
    return { ...mode, toolCallsLeft: budget === null ? null : Math.max(0, budget - toolCalls) };
  }

  /** Step 1 hooks, in registration order: the SelfRef queue (6.2), then queued user messages. */
  private collectHooks(): Mutation[] {
    const run = this.loop.run;
    const selfref = collectSelfRefMutations(run.durable.selfref_queue);
    const messages = this.loop.options.foldInbox
      ? run.durable.inbox.splice(0).map((entry) => userMessageMutation(entry.content))
      : [];
    return [...selfref, ...messages];
  }

  /**
   * The hooks of step 1 with each queued message checked by the input guardrails: it joins as they let
   * it go on; a blocked one is dropped (its verdict is in the log), and the run goes on without it.
   */
  private async screenedHooks(eventIteration: number): Promise<Mutation[]> {
    const selfref = collectSelfRefMutations(this.loop.run.durable.selfref_queue);
    return [...selfref, ...(await this.screenedInbox(eventIteration))];
  }

  /** Whether queued messages meet input guardrails before they join (a run folding them, with such checks). */
  private screensInbox(): boolean {
    return this.loop.options.foldInbox && checksAt(this.loop.agent, 'input');
  }

  /** The queued messages as the input guardrails let them join (each checked, the inbox emptied). */
  private async screenedInbox(eventIteration: number): Promise<Mutation[]> {
    const messages: Mutation[] = [];
    for (const entry of this.loop.run.durable.inbox.splice(0)) {
      const decided = await decide(this.loop, { stage: 'input', text: entry.content }, eventIteration);
      if (decided.decision === 'allow') messages.push(userMessageMutation(decided.text));
    }
    return messages;
  }

  /** The input guardrails on a session's message: its text as it goes on (a block throws `GuardrailBlocked`). */
  admitted(content: string, eventIteration: number): Promise<string> {
    return admittedMessage(this.loop, content, eventIteration);
  }

  /** The budget stopped the turn before its next step: nothing of that step is committed. */
  private budgetExhausted(stop: BudgetStop, iteration: number): TurnResult {
    const run = this.loop.run;
    emit(run, { event_type: 'budget_exhausted', exceeded: stop.exceeded, waiting: false, ...budgetFigures(run) });
    return { ...this.finish([], 'budget_exhausted', '', iteration), exceeded: stop.exceeded };
  }

  private finish(
    mutations: Mutation[],
    status: TurnResult['status'],
    finalResponse: string,
    iteration: number,
    markAborted = true,
  ): TurnResult {
    const run = this.loop.run;
    commit(run, mutations);
    // A handoff whose result the batch committed before an abort ended the turn still takes effect.
    settleHandoff(this.loop);
    run.durable.iteration = iteration + 1;
    emit(run, events.reactEnd(run, status, finalResponse, iteration, markAborted), iteration);
    return { status, answer: status === 'completed' ? finalResponse : null, finalResponse };
  }
}

function outputCheckOf(llm: LlmPhaseResult): Pick<TurnResult, 'outputCheck'> {
  return llm.output_check ? { outputCheck: llm.output_check } : {};
}
