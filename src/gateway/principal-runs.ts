import { WorkflowNotFoundError } from '@temporalio/client';
import {
  runSummaryOf,
  type PatchloopClient,
  type RunFilter,
  type RunHandle,
  type RunSummary,
  type SessionHandle,
  type StartOptions,
} from '../client/patchloop-client';
import { PATCHLOOP_SEARCH_ATTRIBUTES as keys } from '../common';
import type { AgentRunInputWire, ChatSessionInputWire } from '../runtime';
import type { Principal } from './principal';
import { RateLimits, type PrincipalLimits } from './rate-limits';

/**
 * The runs a principal may see and act on: those it started (`PatchloopPrincipal`), or every run for an
 * admin. Anything else is not found, never forbidden: a caller learns nothing of runs that are not its
 * own, not even that they exist. Starting a run counts against the principal's limits.
 */
export class PrincipalRuns {
  private readonly limits: RateLimits;

  constructor(
    readonly client: PatchloopClient,
    limits: Partial<PrincipalLimits> = {},
  ) {
    this.limits = new RateLimits(limits, (principal) =>
      client.temporal.workflow
        // A principal's name has no quote (PRINCIPAL_NAME): it goes into the query as it is.
        .count(
          `${keys.principal.name} = '${principal}' AND ExecutionStatus = 'Running' AND WorkflowType IN ('agentRun', 'chatSession')`,
        )
        .then(({ count }) => count),
    );
  }

  /** Starts a run for the principal; `RateLimited` when its limits say not now. */
  async start(
    principal: Principal,
    input: AgentRunInputWire,
    options: Omit<StartOptions, 'principal'> = {},
  ): Promise<RunHandle> {
    await this.limits.admit(principal.name);
    return this.client.start(input, { ...options, principal: principal.name });
  }

  /** Starts a chat session for the principal; `RateLimited` when its limits say not now. */
  async startSession(
    principal: Principal,
    input: ChatSessionInputWire,
    options: { sessionId?: string } = {},
  ): Promise<SessionHandle> {
    await this.limits.admit(principal.name);
    return this.client.startSession(input, { ...options, principal: principal.name });
  }

  /** The principal's run or session with this id, or undefined: none, or another principal's. */
  async find(
    principal: Principal,
    workflowId: string,
  ): Promise<{ handle: SessionHandle; summary: RunSummary } | undefined> {
    const handle = this.client.session(workflowId);
    try {
      const description = await handle.workflow.describe();
      if (description.type !== 'agentRun' && description.type !== 'chatSession') return undefined;
      const owner = description.typedSearchAttributes.get(keys.principal);
      if (!principal.admin && owner !== principal.name) return undefined;
      return { handle, summary: runSummaryOf(description) };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  /** The principal's runs and sessions, newest first (an admin's: everyone's, or one principal's). */
  list(principal: Principal, filter: RunFilter = {}): Promise<RunSummary[]> {
    return this.client.listRuns(principal.admin ? filter : { ...filter, principal: principal.name });
  }
}
