import { isCancellation, log, patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { asMessages, validateToolLinkage, type Message } from '../../context';
import { failure, FailureType, searchAttributesIn } from '../../common';
import {
  AgentSpec,
  budgetProblem,
  contextProblem,
  effectiveBudget,
  effectiveContext,
  MCP_LISTING_ACTIVITY_SECONDS,
  ownToolNames,
  readableLimitBytes,
  withMcpGrant,
  seedTranscript,
  type AgentRunInput,
  type BudgetOverride,
  type ContextOverride,
} from '../../runtime';
import { applyAgentLimits, commit, emit, type Run } from './run-state';
import { decideVisibility, keepVisible, visibleWhenFailing } from './visibility';

/** A local resolution reads the worker's registry and the namespace's attributes (cached): seconds at most. */
const LOCAL_RESOLVE_SECONDS = 5;

/** How a new run's context begins: its seed messages, and the task its first event names. */
export interface RunSeed {
  context: Message[];
  prompt: string;
  /** Folded at the first compile instead of now (a fork child's parent context, spec 6.6 step 3). */
  pending?: boolean;
}

/**
 * Opens a run or session: its agent (carried, or resolved by an activity for a new chain), the agent's
 * message limits and visibility; a new chain also gets its seed context and its `react_start` event.
 */
export async function openRun(
  run: Run,
  input: {
    agent: string;
    model?: string | undefined;
    state?: { agent: AgentSpec } | undefined;
    context?: ContextOverride | undefined;
    budget?: BudgetOverride | undefined;
  },
  seed: (agent: AgentSpec) => RunSeed | Promise<RunSeed>,
): Promise<AgentSpec> {
  decideVisibility(run);
  const resolved = input.state
    ? input.state.agent
    : await resolveAgent(input.agent).catch((error: unknown) => {
        // The worker says in the failure whether the run may still show as failed (an unknown agent).
        visibleWhenFailing(run, searchAttributesIn(error));
        throw error;
      });
  // A new chain's model override (a continued one carries the spec with it already).
  const agent = input.model !== undefined && !input.state ? { ...resolved, model: input.model } : resolved;
  run.settings.selfref = agent.selfref;
  run.settings.contextSettings = effectiveContext(agent.context, input.context);
  run.settings.budget = effectiveBudget(agent.budget, input.budget);
  // The agent's own settings were checked when its worker started; a run's override is checked here.
  const problem =
    (input.context ? contextProblem(run.settings.contextSettings) : null) ?? budgetProblem(run.settings.budget);
  if (problem) {
    visibleWhenFailing(run, agent.search_attributes === true);
    throw failure(FailureType.InvalidRunInput, `invalid input: ${problem}`);
  }
  // Wall time counts from the chain's start (workflow time: the same on replay).
  run.durable.ledger.started_at_ms ??= Date.now();
  applyAgentLimits(run, agent);
  run.settings.readableBytes = readableLimitBytes(agent);
  run.live.visibility.enabled = agent.search_attributes === true;
  keepVisible(run, true);
  if (!input.state) {
    // Awaited only when it is a promise (input guardrails): other runs open in the same step as before.
    const seeded = seed(agent);
    const { context, prompt, pending } = seeded instanceof Promise ? await seeded : seeded;
    const replace = { type: 'ContextReplaceMutation' as const, messages: context };
    if (pending) run.durable.pending = [replace];
    else commit(run, [replace]);
    emit(run, { event_type: 'react_start', agent: agent.name, user_task_prompt: prompt, available_tools: agent.tools });
    return agent;
  }
  // After the limits and settings above: messages and budget updates that arrive meanwhile see them.
  return relistedAgent(run, agent);
}

/** The seed messages of a new run or session, its history checked (a broken history fails the run at once). */
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

/**
 * The agent's spec, recorded in history: from a local activity in the current workflow task (no
 * activity to schedule, one billable action less), or, for an agent with MCP servers (their listing
 * may take seconds) and runs recorded before `agent-resolved-locally`, from the `describeAgent` activity.
 */
export async function resolveAgent(name: string): Promise<AgentSpec> {
  if (patched('agent-resolved-locally')) {
    const { describeAgentLocally } = proxyLocalActivities<Activities>({
      startToCloseTimeout: `${LOCAL_RESOLVE_SECONDS}s`,
      summary: `resolve agent ${name}`,
      retry: { maximumAttempts: 5, nonRetryableErrorTypes: [FailureType.UnknownAgent] },
    });
    const local = await describeAgentLocally(name);
    // Parsed again here: a spec recorded by an older worker lacks newer limits, which take their defaults.
    if (local) return AgentSpec.parse(local);
  }
  const { describeAgent } = proxyActivities<Activities>({
    // Long enough for the slowest MCP server's start (its start_timeout_seconds, bounded) and listing;
    // the activity heartbeats meanwhile, so a worker killed during it costs seconds, not this.
    startToCloseTimeout: `${MCP_LISTING_ACTIVITY_SECONDS}s`,
    heartbeatTimeout: '5s',
    summary: `resolve agent ${name}`,
    retry: { maximumAttempts: 5, nonRetryableErrorTypes: [FailureType.UnknownAgent] },
  });
  // Parsed again here: a spec recorded by an older worker lacks newer limits, which take their defaults.
  return AgentSpec.parse(await describeAgent(name));
}

/**
 * A continued run's agent with its MCP tools listed anew (the first list was recorded when the chain
 * started; each continue-as-new fetches a new one). Should the listing fail, the run keeps its tools.
 */
async function relistedAgent(run: Run, agent: AgentSpec): Promise<AgentSpec> {
  // Chains continued by older workers did not relist: their histories replay without the activity.
  if (agent.mcp_servers.length === 0 || !patched('mcp-relist-at-continue-as-new')) return agent;
  const { relistMcpTools } = proxyActivities<Activities>({
    // As for describeAgent: a server started anew at this boundary may take its start_timeout_seconds.
    startToCloseTimeout: `${MCP_LISTING_ACTIVITY_SECONDS}s`,
    heartbeatTimeout: '5s',
    summary: `list MCP tools of ${agent.name} again`,
    retry: { initialInterval: '1s', maximumAttempts: 3 },
  });
  let outcome: Awaited<ReturnType<typeof relistMcpTools>>;
  try {
    outcome = await relistMcpTools({ agent: agent.name, own_tools: ownToolNames(agent) });
  } catch (error) {
    if (isCancellation(error)) throw error;
    // The activity's last failure (its cause) names the server.
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    outcome = { problem: cause instanceof Error ? cause.message : String(cause) };
  }
  if ('problem' in outcome) {
    log.warn('MCP tools not listed again; the run keeps its tools', { problem: outcome.problem });
    emit(run, { event_type: 'mcp_tools_relisted', added: [], removed: [], changed: [], problem: outcome.problem });
    return agent;
  }
  const next = AgentSpec.parse(withMcpGrant(agent, outcome.grant));
  emit(run, { event_type: 'mcp_tools_relisted', ...toolChange(agent, next) });
  return next;
}

/** Which tools one spec offers that the other does not, and which both offer differently. */
function toolChange(before: AgentSpec, after: AgentSpec): { added: string[]; removed: string[]; changed: string[] } {
  const old = new Map(before.tool_descriptors.map((tool) => [tool.name, JSON.stringify(tool)]));
  const now = new Map(after.tool_descriptors.map((tool) => [tool.name, JSON.stringify(tool)]));
  return {
    added: [...now.keys()].filter((name) => !old.has(name)),
    removed: [...old.keys()].filter((name) => !now.has(name)),
    changed: [...now.keys()].filter((name) => old.has(name) && old.get(name) !== now.get(name)),
  };
}
