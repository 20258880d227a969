import { ApplicationFailure, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { asMessages, cloneJson, validateToolLinkage, type Message } from '../context';
import { AgentRunInput, AgentSpec, seedTranscript, type AgentRunResult } from '../runtime';
import { AgentLoop } from './agent-loop';
import { nextRequestQuery } from '../common';
import { parseWorkflowInput } from './input';
import { asRunFailure, withUnprocessedMessages } from './failures';
import { registerRunHandlers } from './handlers';
import { applyAgentLimits, commit, emit, newRun, unprocessedMessages } from './run-state';
import { sinks } from './sinks';

/**
 * A durable ReAct run (spec section 7). Each iteration commits pending patches, compiles the request
 * with the pure core, runs the LLM phase and, when the model asked for tools, the tool batch; both are
 * activities that return patches. An `abort` signal turns into abort patches, so the transcript stays
 * valid however the run ends.
 */
export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const input = parseWorkflowInput(AgentRunInput, rawInput, 'agentRun');
  const run = newRun(input.agent, workflowInfo().workflowId);
  registerRunHandlers(run);
  try {
    const agent = await resolveAgent(input.agent);
    run.selfref = agent.selfref;
    applyAgentLimits(run, agent.limits);
    if (input.fork) {
      // A fork child starts from [] with the parent's context as its first patch (spec 6.6 step 3).
      run.forkDepth = input.fork.depth;
      run.forkId = input.fork.fork_id;
      run.pending = [{ type: 'ContextReplaceMutation', messages: input.fork.context }];
    } else {
      commit(run, [{ type: 'ContextReplaceMutation', messages: checkedSeed(agent, input) }]);
    }
    emit(run, {
      event_type: 'react_start',
      agent: agent.name,
      user_task_prompt: input.input,
      available_tools: agent.tools,
    });
    const loop = new AgentLoop(run, agent, {
      transport: input.request_transport,
      maxToolCalls: input.max_tool_calls !== undefined ? input.max_tool_calls : agent.max_tool_calls,
      foldInbox: true,
    });
    setHandler(nextRequestQuery, () => loop.previewRequest());
    const turn = await loop.turn();
    run.state = turn.status;
    const unprocessed = unprocessedMessages(run);
    const result: AgentRunResult = {
      status: turn.status,
      answer: turn.answer,
      transcript: cloneJson(run.transcript),
      usage: run.usage,
      ...(turn.status === 'aborted' ? { abort_reason: run.abort.reason } : {}),
      ...(unprocessed.length > 0 ? { unprocessed_messages: unprocessed } : {}),
    };
    sinks.patchloop.runEnded({
      status: turn.status,
      result,
      llmCalls: run.llmCalls,
      toolCalls: run.toolCalls,
    });
    return result;
  } catch (error) {
    run.state = 'failed';
    throw withUnprocessedMessages(asRunFailure(error), unprocessedMessages(run));
  }
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
    throw ApplicationFailure.nonRetryable(
      `invalid ${workflow} input: history: ${(error as Error).message}`,
      'InvalidRunInput',
    );
  }
  return seed;
}

export async function resolveAgent(name: string): Promise<AgentSpec> {
  const { describeAgent } = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['UnknownAgent'] },
  });
  // Parsed again here: a spec recorded by an older worker lacks newer limits, which take their defaults.
  return AgentSpec.parse(await describeAgent(name));
}
