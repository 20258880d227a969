import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { RunHandle } from '../../client/patchloop-client';
import type { PendingApproval } from '../../runtime';

/** How long an asked client has to answer one approval; unanswered, it is asked again at the next look. */
const ANSWER_WAIT_MS = 24 * 60 * 60 * 1000;
/** The most argument characters an approval's question shows. */
const SHOWN_ARGUMENT_CHARS = 2000;
/** Decided calls a connection remembers (not to ask about one again while the run has not seen the decision yet). */
const REMEMBERED_DECISIONS = 1000;

/** One waiting call in words: its sub-agent, its tool and its arguments (cut to a bound). */
function callText(call: PendingApproval): string {
  const shown = JSON.stringify(call.arguments);
  const args = shown.length > SHOWN_ARGUMENT_CHARS ? `${shown.slice(0, SHOWN_ARGUMENT_CHARS)}…` : shown;
  return `${call.agent ? `${call.agent}: ` : ''}${call.tool_name} ${args}`;
}

/** What the waiting calls wait for, in words (a task's status message). */
function approvalQuestion(pending: readonly PendingApproval[]): string {
  return `the run waits for a decision on ${pending.map(callText).join('; ')}`;
}

/** The form an approval asks the client to fill: approve or not, and why. */
function approvalForm(run: RunHandle, call: PendingApproval): ElicitRequestFormParams {
  return {
    mode: 'form',
    message: `Run ${run.workflow.workflowId} asks to call ${callText(call)}. Approve?`,
    requestedSchema: {
      type: 'object',
      properties: {
        approve: { type: 'boolean', title: 'Approve', description: `Run ${call.tool_name} with these arguments` },
        reason: { type: 'string', title: 'Reason', description: 'Why (the model reads it)' },
      },
      required: ['approve'],
    },
  };
}

/**
 * The approvals a connection asks its client about (MCP elicitation), once per waiting call while the
 * question is open: the answer decides the call (accept with `approve`, or decline: rejected); a client
 * that dismisses the question (cancel) or does not answer in time is asked again at the next look. A
 * client without elicitation is not asked: the task says what the run waits for, and `patchloop approve`
 * or the console decides it.
 */
export class ApprovalAsks {
  /** The calls asked about and not answered yet (by run and call id). */
  private readonly open = new Set<string>();
  /** The calls this connection decided, oldest first, bounded. */
  private readonly decided = new Set<string>();

  constructor(private readonly serverOf: () => Server) {}

  private get canAsk(): boolean {
    return this.serverOf().getClientCapabilities()?.elicitation !== undefined;
  }

  /**
   * For a task waiting for the caller: asks about each waiting call not yet asked, queued for the
   * client's next `tasks/result` (the Tasks extension's side channel). Answers the task's status message.
   */
  async askForTask(run: RunHandle, taskId: string): Promise<string | undefined> {
    const pending = await run.pendingApprovals();
    if (this.canAsk) for (const call of pending) this.ask(run, call, { relatedTask: { taskId } });
    return pending.length > 0 ? approvalQuestion(pending) : undefined;
  }

  /** For a call answered in the call: asks about each waiting call on the call's own stream. */
  askInCall(run: RunHandle, extra: { requestId: string | number }): void {
    if (!this.canAsk) return;
    void run
      .pendingApprovals()
      .then((pending) => {
        for (const call of pending) this.ask(run, call, { relatedRequestId: extra.requestId });
      })
      .catch(() => undefined);
  }

  private ask(run: RunHandle, call: PendingApproval, options: RequestOptions): void {
    const key = `${run.workflow.workflowId}/${call.workflow_id ?? ''}/${call.tool_call_id}`;
    if (this.open.has(key) || this.decided.has(key)) return;
    this.open.add(key);
    void this.serverOf()
      .elicitInput(approvalForm(run, call), { ...options, timeout: ANSWER_WAIT_MS })
      .then(async (answer) => {
        if (!(await decide(run, call, answer))) return;
        this.decided.add(key);
        if (this.decided.size > REMEMBERED_DECISIONS) this.decided.delete(this.decided.values().next().value!);
      })
      .catch(() => undefined)
      .finally(() => this.open.delete(key));
  }
}

/**
 * Applies a client's answer: accepted with `approve` approves, anything else accepted or declined
 * rejects; whether it decided (a dismissed form does not).
 */
async function decide(run: RunHandle, call: PendingApproval, answer: ElicitResult): Promise<boolean> {
  if (answer.action === 'cancel') return false;
  const given = typeof answer.content?.['reason'] === 'string' ? answer.content['reason'].trim() : '';
  if (answer.action === 'accept' && answer.content?.['approve'] === true)
    await run.approve(call.tool_call_id, given || 'approved by the MCP client', call.workflow_id);
  else
    await run.reject(
      call.tool_call_id,
      given || (answer.action === 'decline' ? 'declined by the MCP client' : 'rejected by the MCP client'),
      call.workflow_id,
    );
  return true;
}
