import { globMatches } from './tool-policy';
import { stageChecksFor } from './guardrails';
import { repairToolArguments, toolFailureContent, type Mutation } from '../context';
import type { AgentSpec } from './agent';
import { cancelledCallMutation } from './abort-mutations';
import type { ToolBatchInput, ToolBatchResult, ToolCallReport, ToolCallRequest } from './phases';
import { SELFREF_FORK } from './selfref-tools';
import type { WaitTool } from './waits';

/**
 * Where one call of a tool batch runs (spec 7.6): nowhere (a decision rejected it, its result is
 * ready), as a child run of this context (`selfref_fork`), as a sub-agent's run, as a handoff the
 * workflow resolves itself, as a durable wait (a timer in the workflow), or in a batch activity on a
 * task queue (undefined: the run's own).
 */
type CallRoute =
  | { kind: 'rejected' }
  | { kind: 'fork' }
  | { kind: 'wait'; tool: WaitTool }
  | { kind: 'subagent'; agent: string }
  | { kind: 'handoff' }
  | { kind: 'activity'; queue: string | undefined };

/** The calls of a batch that one activity runs: on one task queue, local when every tool is fast. */
export interface ActivityGroup {
  queue: string | undefined;
  calls: ToolCallRequest[];
  /** Fast tools only, on the run's own queue: one local activity, no dispatch of its own. */
  local: boolean;
  /** Which MCP server serves each MCP tool of the group (absent: none). */
  mcp_tools?: ToolBatchInput['mcp_tools'];
}

/** Which calls of a batch run where: decided from the spec the run recorded, so a replay takes the same path. */
export interface BatchPlan {
  /** By the call's position in the batch. */
  routes: CallRoute[];
  /** Activity calls by task queue, queues in the order their first call comes. */
  groups: ActivityGroup[];
  /** The activity calls of every queue, in declared order. */
  activityCalls: ToolCallRequest[];
  /** Handoff calls, in declared order (the first one wins). */
  handoffs: ToolCallRequest[];
  /** Sub-agent calls: they share what the run has left of its budget. */
  subagents: number;
}

type PlannedAgent = Pick<AgentSpec, 'selfref' | 'tool_descriptors' | 'tool_task_queues'>;

/** The plan of a batch whose `rejected` calls (by the call itself: ids may repeat) will not run. */
export function planBatch(
  agent: PlannedAgent,
  calls: readonly ToolCallRequest[],
  rejected: (call: ToolCallRequest) => boolean,
): BatchPlan {
  const routes = calls.map((call) => routeOf(agent, call, rejected(call)));
  const byQueue = new Map<string | undefined, ToolCallRequest[]>();
  calls.forEach((call, index) => {
    const route = routes[index]!;
    if (route.kind === 'activity') byQueue.set(route.queue, [...(byQueue.get(route.queue) ?? []), call]);
  });
  return {
    routes,
    groups: [...byQueue].map(([queue, group]) => activityGroup(agent, queue, group)),
    activityCalls: calls.filter((_call, index) => routes[index]!.kind === 'activity'),
    handoffs: calls.filter((_call, index) => routes[index]!.kind === 'handoff'),
    subagents: routes.filter((route) => route.kind === 'subagent').length,
  };
}

function routeOf(agent: PlannedAgent, call: ToolCallRequest, rejected: boolean): CallRoute {
  if (rejected) return { kind: 'rejected' };
  if (agent.selfref && call.name === SELFREF_FORK) return { kind: 'fork' };
  const descriptor = agent.tool_descriptors.find((tool) => tool.name === call.name);
  if (descriptor?.durable_wait) return { kind: 'wait', tool: descriptor.durable_wait };
  const target = descriptor?.agent_call;
  if (target?.kind === 'subagent') return { kind: 'subagent', agent: target.agent };
  if (target?.kind === 'handoff') return { kind: 'handoff' };
  return { kind: 'activity', queue: agent.tool_task_queues?.[call.name] };
}

function activityGroup(agent: PlannedAgent, queue: string | undefined, calls: ToolCallRequest[]): ActivityGroup {
  const fast = new Set(agent.tool_descriptors.filter((tool) => tool.fast).map((tool) => tool.name));
  const mcp: NonNullable<ToolBatchInput['mcp_tools']> = {};
  for (const tool of agent.tool_descriptors)
    if (tool.mcp && calls.some((call) => call.name === tool.name)) mcp[tool.name] = tool.mcp;
  return {
    queue,
    calls,
    local: queue === undefined && calls.every((call) => fast.has(call.name)),
    ...(Object.keys(mcp).length > 0 ? { mcp_tools: mcp } : {}),
  };
}

type FusableAgent = PlannedAgent & Pick<AgentSpec, 'needs_approval' | 'policy' | 'guardrails'>;

/**
 * The tools whose calls the model call's activity may run itself, right after the reply: those a batch
 * of their own would run as one local activity with nothing to decide first (fast, on the run's own
 * task queue, no approval, not carried out by the workflow). The iteration then costs one activity, not
 * an activity and a workflow task with a local activity.
 */
export function fusableTools(agent: FusableAgent): string[] {
  return agent.tool_descriptors
    .filter(
      (tool) =>
        tool.fast === true &&
        !tool.mcp &&
        !tool.agent_call &&
        !tool.durable_wait &&
        !(agent.selfref && tool.name === SELFREF_FORK) &&
        agent.tool_task_queues?.[tool.name] === undefined &&
        !agent.needs_approval.includes(tool.name) &&
        // A call a policy rule could deny or gate is decided by the workflow first.
        !(agent.policy ?? []).some((rule) => rule.decision !== 'allow' && globMatches(rule.tool, tool.name)) &&
        // So is a call or a result a guardrail checks.
        stageChecksFor(agent.guardrails, 'tool', tool.name).length === 0 &&
        stageChecksFor(agent.guardrails, 'tool_result', tool.name).length === 0,
    )
    .map((tool) => tool.name);
}

/** Whether a reply's calls may run in the model call's activity: some, all of fusable tools, within the budget left. */
export function fusedCalls(
  fast: { names: readonly string[]; max_calls: number | null },
  calls: readonly ToolCallRequest[],
): boolean {
  return (
    calls.length > 0 &&
    (fast.max_calls === null || calls.length <= fast.max_calls) &&
    calls.every((call) => fast.names.includes(call.name))
  );
}

/** A finished call handled by the workflow itself (a fork, a sub-agent call, a handoff, a rejection). */
export interface WorkflowCallResult {
  call: ToolCallRequest;
  content: string;
  report: ToolCallReport;
}

/** A call the workflow carried out, with this result. */
export function succeededCall(call: ToolCallRequest, content: string, durationMs: number): WorkflowCallResult {
  return {
    call,
    content,
    report: { tool_call_id: call.id, tool_name: call.name, success: true, duration_ms: durationMs },
  };
}

/** A call the workflow could not carry out: the model reads the error as the call's result. */
export function failedCall(
  call: ToolCallRequest,
  message: string,
  durationMs: number,
  argumentText = repairToolArguments(call.arguments).text,
): WorkflowCallResult {
  return {
    call,
    content: toolFailureContent(call.name, argumentText, message),
    report: { tool_call_id: call.id, tool_name: call.name, success: false, error: message, duration_ms: durationMs },
  };
}

/** What one activity returned for its calls. */
export interface ActivityPart {
  calls: readonly ToolCallRequest[];
  result: ToolBatchResult;
}

/**
 * The one merge of a batch's results back into its declared order: each call takes the workflow's own
 * result for it, else the next result for its id from the activity that ran it (a provider may repeat an
 * id within one batch, even across queues), else a cancellation (with the activity's note when it left
 * the call running). Plain results and cancellations come first, multimodal results last (spec 7.6,
 * 10.c). `reports` are in completion order already.
 */
export function mergeInDeclaredOrder(
  calls: readonly ToolCallRequest[],
  parts: readonly ActivityPart[],
  own: readonly WorkflowCallResult[],
  reports: ToolCallReport[],
): ToolBatchResult {
  const results = parts.map((part) => ({ calls: part.calls, byId: mutationsByCallId(resultMutations(part.result)) }));
  const ownByCall = new Map(own.map((result) => [result.call, result]));
  const plain: Mutation[] = [];
  const multimodal: Mutation[] = [];
  const unfinished: string[] = [];
  for (const call of calls) {
    const mine = ownByCall.get(call);
    const mutation: Mutation = mine
      ? { type: 'ToolResultMutation', tool_call_id: call.id, content: mine.content }
      : (results
          .find((part) => part.calls.includes(call))
          ?.byId.get(call.id)
          ?.shift() ?? cancelledCallMutation(call));
    if (mutation.type === 'ToolCancelledMutation') unfinished.push(call.id);
    (mutation.type === 'MultimodalToolResultMutation' ? multimodal : plain).push(mutation);
  }
  const customEvents = parts.flatMap((part) => part.result.custom_events ?? []);
  return {
    outcome: parts.some((part) => part.result.outcome === 'aborted') || unfinished.length > 0 ? 'aborted' : 'completed',
    mutations: [...plain, ...multimodal],
    reports,
    unfinished,
    intents: mergedIntents(calls, parts),
    ...(parts.some((part) => part.result.custom_events) ? { custom_events: customEvents } : {}),
  };
}

/** SelfRef intents: one activity's as it listed them (declared order), several by their calls' positions. */
function mergedIntents(calls: readonly ToolCallRequest[], parts: readonly ActivityPart[]): ToolBatchResult['intents'] {
  // Results recorded by workers older than SelfRef carry no intents.
  if (parts.length === 1) return parts[0]!.result.intents ?? [];
  const position = new Map(calls.map((call, index) => [call.id, index]));
  const order = (id: string) => position.get(id) ?? 0;
  return parts
    .flatMap((part) => part.result.intents ?? [])
    .sort((a, b) => order(a.tool_call_id) - order(b.tool_call_id));
}

function resultMutations(result: ToolBatchResult): Mutation[] {
  return result.mutations.filter(
    (mutation) =>
      mutation.type === 'ToolResultMutation' ||
      mutation.type === 'MultimodalToolResultMutation' ||
      mutation.type === 'ToolCancelledMutation',
  );
}

/** A batch's mutations for each call id, in order: a provider may repeat an id within one batch. */
function mutationsByCallId(mutations: readonly Mutation[]): Map<string, Mutation[]> {
  const byId = new Map<string, Mutation[]>();
  for (const mutation of mutations) {
    if (!('tool_call_id' in mutation)) continue;
    byId.set(mutation.tool_call_id, [...(byId.get(mutation.tool_call_id) ?? []), mutation]);
  }
  return byId;
}

/** Spec 8.2: an abort before the batch starts runs nothing; every call gets a cancellation result. */
export function cancelledBatch(calls: readonly ToolCallRequest[]): ToolBatchResult {
  return {
    outcome: 'aborted',
    mutations: calls.map((call) => cancelledCallMutation(call)),
    reports: [],
    unfinished: calls.map((call) => call.id),
    intents: [],
  };
}

export const EMPTY_BATCH: ToolBatchResult = {
  outcome: 'completed',
  mutations: [],
  reports: [],
  unfinished: [],
  intents: [],
};
