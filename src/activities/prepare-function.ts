import { z } from 'zod';
import type { AgentRegistry } from '../agents/registry';
import { AgentSpec, type LlmFunctionInput, type PreparedFunction } from '../runtime';
import { failure, FailureType } from '../common';

/**
 * Resolves a typed LLM function for workflow `llmFunction`: checks the arguments with the function's
 * input schema (a mismatch fails at once), renders the prompt, and describes it as an agent whose
 * requests carry the output schema as the provider's structured-output format.
 */
export function createPrepareFunction(registry: AgentRegistry, defaultModel: string) {
  return async function prepareFunction(input: LlmFunctionInput): Promise<PreparedFunction> {
    const fn = registry.llmFunction(input.function);
    const parsed = fn.definition.input.safeParse(input.args);
    if (!parsed.success) {
      throw failure(
        FailureType.InvalidFunctionArgs,
        `invalid arguments for function '${fn.name}': ${z.prettifyError(parsed.error)}`,
      );
    }
    const tools = fn.definition.tools ?? [];
    const agent = AgentSpec.parse({
      name: fn.name,
      instructions: fn.renderPrompt(parsed.data),
      model: fn.definition.model ?? defaultModel,
      tools,
      stream: true,
      llm_options: {
        response_format: { type: 'json_schema', json_schema: { name: fn.name, schema: fn.outputSchema } },
      },
      tool_descriptors: registry.toolDescriptors(tools),
    });
    return {
      agent,
      seed: [
        { role: 'system', content: agent.instructions },
        {
          role: 'user',
          content: `Input:\n${JSON.stringify(parsed.data, null, 2)}\n\nReply with only a JSON value that matches the output schema.`,
        },
      ],
      max_repairs: fn.definition.maxRepairs ?? 2,
    };
  };
}
