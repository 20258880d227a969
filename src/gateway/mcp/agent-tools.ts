import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { RunFailedError, type RunHandle } from '../../client/patchloop-client';
import type { AgentDefinitionInput, AgentRunInputWire, AgentRunResult } from '../../runtime';
import { sharedSchema } from '../../context/shared-schema';
import { agentDescription } from '../agent-description';

/** The most characters a tool call's `input` and `context` may hold together (a run's input is recorded). */
const MCP_INPUT_MAX_CHARS = 256 * 1024;

/** What each agent's tool takes: the request, and background the caller adds. */
const AgentToolArguments = sharedSchema('gateway/mcp/agent-tools#AgentToolArguments', () =>
  z.strictObject({
    input: z.string().min(1).describe('What to ask the agent: it starts a run with this as the user message.'),
    context: z
      .string()
      .optional()
      .describe('Background the agent should know (files, earlier findings): it follows the input, marked as context.'),
  }),
);
type AgentToolArguments = z.infer<typeof AgentToolArguments>;

/** What each agent's tool answers besides its text: the run, how it ended, its answer and usage. */
const AgentToolOutput = sharedSchema('gateway/mcp/agent-tools#AgentToolOutput', () =>
  z.object({
    run_id: z.string().describe("The run's id (its workflow id): patchloop show RUN, the console."),
    status: z.enum(['completed', 'aborted', 'budget_exhausted', 'failed']),
    answer: z.string().nullable(),
    usage: z
      .object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() })
      .loose()
      .nullable(),
  }),
);
type AgentToolOutput = z.infer<typeof AgentToolOutput>;

/** An agent as an MCP tool: a call starts a run; a task-augmented call returns a task at once. */
export function agentTool(agent: AgentDefinitionInput): Tool {
  return {
    name: agent.name,
    title: agent.name,
    description: `${agentDescription(agent)} (a patchloop agent: each call is a durable run.)`,
    inputSchema: z.toJSONSchema(AgentToolArguments) as Tool['inputSchema'],
    outputSchema: z.toJSONSchema(AgentToolOutput) as Tool['outputSchema'],
    annotations: { openWorldHint: true },
    execution: { taskSupport: 'optional' },
  };
}

/**
 * A call's arguments as a run's input, or what is wrong with them (a tool error the caller's model
 * reads). The context follows the input, marked.
 */
export function runInputOf(
  agent: string,
  args: unknown,
): { input: AgentRunInputWire; problem?: never } | { problem: string } {
  const parsed = AgentToolArguments.safeParse(args ?? {});
  if (!parsed.success) return { problem: `invalid arguments for ${agent}: ${z.prettifyError(parsed.error)}` };
  const { input, context } = parsed.data;
  if (input.length + (context?.length ?? 0) > MCP_INPUT_MAX_CHARS)
    return { problem: `input and context hold more than ${MCP_INPUT_MAX_CHARS} characters: send less` };
  return { input: { agent, input: context ? `${input}\n\nContext:\n${context}` : input } };
}

/** A tool result in MCP's shape: the text, and the run's outcome as structured content. */
function toolResult(output: AgentToolOutput, text: string): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    structuredContent: output,
    isError: output.status !== 'completed',
  };
}

/** The tool result of a run that ended: its answer with usage, or why it has none. */
function callResultOf(runId: string, result: AgentRunResult): CallToolResult {
  const output: AgentToolOutput = { run_id: runId, status: result.status, answer: result.answer, usage: result.usage };
  if (result.status === 'completed') return toolResult(output, result.answer ?? '');
  const why =
    result.status === 'aborted'
      ? `the run was aborted${result.abort_reason ? `: ${result.abort_reason}` : ''}`
      : 'the run stopped at its budget before it answered';
  return toolResult(output, `${why} (run ${runId})`);
}

/** The tool result of a run when it has closed: `callResultOf`, or its failure in its own words. */
export async function closedCallResult(run: RunHandle): Promise<CallToolResult> {
  const runId = run.workflow.workflowId;
  try {
    return callResultOf(runId, await run.result());
  } catch (error) {
    if (!(error instanceof RunFailedError)) throw error;
    return toolResult(
      { run_id: runId, status: 'failed', answer: null, usage: null },
      `the run failed: ${error.causeMessage}`,
    );
  }
}
