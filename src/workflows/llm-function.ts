import { proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { JsonValue } from '../context';
import { LlmFunctionInput, PreparedFunction } from '../runtime';
import { AgentLoop } from './loop/agent-loop';
import { nextRequestQuery, failure, FailureType } from '../common';
import { parseWorkflowInput } from './run/input';
import { asRunFailure } from './run/failures';
import { registerRunHandlers } from './handlers/run-handlers';
import { commit, newRun, userMessageMutation } from './run/run-state';
import { sinks } from './sinks';

/**
 * A typed LLM function, durably: the rendered prompt and the arguments go to the model with the output
 * schema as structured-output format; a reply that is not valid JSON for the schema goes back to the
 * model with the validation error, a bounded number of times. Returns the validated output.
 */
export async function llmFunction(rawInput: unknown): Promise<JsonValue> {
  const input = parseWorkflowInput(LlmFunctionInput, rawInput, 'llmFunction');
  const run = newRun(input.function, workflowInfo().workflowId);
  run.settings.acceptsMessages = false;
  registerRunHandlers(run);
  try {
    const prepared = await prepare(input);
    commit(run, [{ type: 'ContextReplaceMutation', messages: prepared.seed }]);
    const loop = new AgentLoop(run, prepared.agent, {
      transport: 'query',
      maxToolCalls: null,
      foldInbox: false,
      outputCheck: input.function,
      // The function preset (spec 2.3): the rendered template is the system prompt, no must-principles block.
      contract: {
        base_instruction: '',
        system_prompt: prepared.agent.instructions,
        tool_prompt_specs: [],
        include_must_principles: false,
      },
    });
    setHandler(nextRequestQuery, () => loop.previewRequest());
    for (let attempt = 1; ; attempt += 1) {
      const turn = await loop.turn();
      if (turn.status === 'aborted')
        throw failure(
          FailureType.FunctionAborted,
          `function '${input.function}' was aborted${run.live.abort.reason ? `: ${run.live.abort.reason}` : ''}`,
        );
      const check = turn.outputCheck ?? { ok: false as const, error: 'no output check ran' };
      if (check.ok) {
        run.live.state = 'completed';
        sinks.patchloop.runEnded({
          status: 'completed',
          result: check.value,
          llmCalls: run.durable.llm_calls,
          toolCalls: run.durable.tool_calls,
        });
        return check.value;
      }
      if (attempt > prepared.max_repairs) {
        throw failure(
          FailureType.InvalidFunctionOutput,
          `function '${input.function}' returned invalid output ${attempt} time(s): ${check.error}. Last raw output: ${JSON.stringify(turn.finalResponse)}`,
        );
      }
      run.durable.pending.push(
        userMessageMutation(
          `Your reply was rejected: ${check.error}. Reply again with only a JSON value that matches the output schema.`,
        ),
      );
    }
  } catch (error) {
    run.live.state = 'failed';
    throw asRunFailure(error);
  }
}

async function prepare(input: LlmFunctionInput): Promise<PreparedFunction> {
  const { prepareFunction } = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    retry: {
      maximumAttempts: 5,
      nonRetryableErrorTypes: [FailureType.UnknownFunction, FailureType.InvalidFunctionArgs],
    },
  });
  // Parsed again: a function prepared by an older worker lacks newer limits, which take their defaults.
  return PreparedFunction.parse(await prepareFunction(input));
}
