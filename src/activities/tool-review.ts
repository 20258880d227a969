import { Context } from '@temporalio/activity';
import { repairToolArguments } from '../context';
import type { ToolReview, ToolReviewInput } from '../runtime';
import type { AgentRegistry } from '../agents/registry';
import { validateArguments } from './tool-call';

/**
 * Before a batch with gated tools runs: which calls wait for a person. Arguments are repaired and
 * validated first (a call that would fail validation is not put to anyone: it fails as an argument
 * error in the batch), then the agent's list and the tool's own `needsApproval` decide. A predicate
 * that throws gates the call: when in doubt, ask. An MCP tool the agent's list names waits when its
 * arguments are a JSON object (its server checks them against its schema when the call runs); so does a
 * gated sub-agent or handoff call (the workflow checks its arguments when it carries it out).
 */
export function createReviewToolCalls(registry: AgentRegistry) {
  return async function reviewToolCalls(input: ToolReviewInput): Promise<ToolReview[]> {
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? 'unknown-workflow';
    const reviews: ToolReview[] = [];
    for (const call of input.calls) {
      const none = { tool_call_id: call.id, needs_approval: false, arguments: null };
      const tool = registry.toolFor(input.agent, call.name);
      const repaired = repairToolArguments(call.arguments);
      const gatedCall =
        registry.gatesMcpTool(input.agent, call.name) || registry.gatesAgentCall(input.agent, call.name);
      if (!tool && repaired.ok && gatedCall) {
        reviews.push({ tool_call_id: call.id, needs_approval: true, arguments: repaired.value });
        continue;
      }
      if (!tool || !repaired.ok) {
        reviews.push(none);
        continue;
      }
      const validated = validateArguments(tool, repaired.value);
      if (!validated.ok) {
        reviews.push(none);
        continue;
      }
      const flag = tool.needsApproval;
      let needed = registry.gatedByAgent(input.agent, call.name) || flag === true;
      if (!needed && typeof flag === 'function') {
        try {
          needed = await flag(validated.value, { toolCallId: call.id, workflowId, iteration: input.iteration });
        } catch {
          needed = true;
        }
      }
      reviews.push({ tool_call_id: call.id, needs_approval: needed === true, arguments: repaired.value });
    }
    return reviews;
  };
}
